"""Proto3 JSON output, as json_format writes it, from a plan made once per message type.

json_format.MessageToDict asks, of every field of every message it writes, what kind of field
it is (a map? a wrapper? a well-known type? an enum with JSON names of its own?), and the
answers depend on the field alone. Here they are taken once per message type: each field's
JSON name and the function that writes its value. A message type with a field the plan does
not cover (a map, a float, an extension, a closed enum, a well-known type other than
Timestamp, an enum value with options) is written by json_format itself, so the output is
json_format's whatever the message (tests/unit/test_json_output.py compares the two on every
response message of the API).
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from google.protobuf import json_format
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

Write = Callable[[Any], Any]

_TIMESTAMP = "google.protobuf.Timestamp"
_EPOCH = datetime(1970, 1, 1)  # noqa: DTZ001 # naive, as ToJsonString's: isoformat() then has no offset
_FIRST_SECOND = -62135596800  # 0001-01-01T00:00:00Z
_LAST_SECOND = 253402300799  # 9999-12-31T23:59:59Z
_INTEGERS = (
    FieldDescriptor.TYPE_INT32,
    FieldDescriptor.TYPE_SINT32,
    FieldDescriptor.TYPE_SFIXED32,
    FieldDescriptor.TYPE_UINT32,
    FieldDescriptor.TYPE_FIXED32,
)
_INT64S = (
    FieldDescriptor.TYPE_INT64,
    FieldDescriptor.TYPE_SINT64,
    FieldDescriptor.TYPE_SFIXED64,
    FieldDescriptor.TYPE_UINT64,
    FieldDescriptor.TYPE_FIXED64,
)

# Each message type's writer, made the first time one of its messages is written.
_writers: dict[Any, Write] = {}  # by descriptor


def message_to_dict(message: Message) -> Any:
    """What json_format.MessageToDict answers for the message, with its default options."""
    write = _writers.get(message.DESCRIPTOR)
    if write is None:
        write = _writers[message.DESCRIPTOR] = _writer_of(message.DESCRIPTOR)
    return write(message)


def _writer_of(descriptor: Any) -> Write:
    if descriptor.full_name == _TIMESTAMP:
        return _timestamp
    if descriptor.file.package == "google.protobuf" or descriptor.extension_ranges:
        return json_format.MessageToDict  # the other well-known types have JSON forms of their own
    fields: dict[int, tuple[str, Write]] = {}
    for field in descriptor.fields:
        write = _value_writer(field)
        if write is None:
            return json_format.MessageToDict
        fields[field.number] = (field.json_name, _each(write) if field.is_repeated else write)

    def write_message(message: Message) -> dict[str, Any]:
        written = {}
        for field, value in message.ListFields():  # the fields set, by number, as json_format lists them
            name, write = fields[field.number]
            written[name] = write(value)
        return written

    return write_message


def _value_writer(field: Any) -> Write | None:  # noqa: PLR0911 # one writer per kind of field
    kind = field.type
    if kind == FieldDescriptor.TYPE_STRING:
        return str
    if kind in _INTEGERS:
        return int
    if kind in _INT64S:
        return str
    if kind == FieldDescriptor.TYPE_BOOL:
        return bool
    if kind == FieldDescriptor.TYPE_BYTES:
        return _base64
    if kind == FieldDescriptor.TYPE_ENUM:
        return _enum_writer(field)
    if kind == FieldDescriptor.TYPE_MESSAGE and field.message_type is not None:
        return None if field.message_type.GetOptions().map_entry else message_to_dict
    return None  # floats (NaN, infinities, float32's shortest form), groups


def _enum_writer(field: Any) -> Write | None:
    enum = field.enum_type
    if enum is None or enum.is_closed or enum.full_name == "google.protobuf.NullValue":
        return None  # a closed enum refuses unknown numbers; NullValue is JSON's null
    if any(value.has_options for value in enum.values):
        return None  # an option may give a value a JSON name of its own
    names = {value.number: value.name for value in enum.values}
    return lambda number: names.get(number, number)  # an unknown number of an open enum as itself


def _each(write: Write) -> Write:
    return lambda values: [write(value) for value in values]


def _base64(value: bytes) -> str:
    return base64.b64encode(value).decode()


def _timestamp(value: Any) -> str:
    """A Timestamp as ToJsonString writes it. The contract's timestamps are whole seconds, written
    here without its checks and conversions; a fraction, or seconds outside years 1 to 9999
    (which it refuses), go to it."""
    seconds = value.seconds
    if value.nanos or not _FIRST_SECOND <= seconds <= _LAST_SECOND:
        return value.ToJsonString()  # type: ignore[no-any-return]
    return (_EPOCH + timedelta(seconds=seconds)).isoformat() + "Z"
