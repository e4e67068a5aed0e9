"""Proto3 JSON input, with errors that name the field in the caller's terms.

Google's parser stops at the first problem with a message made for debugging
("invalid literal for int() with base 10"). When it refuses a document, the
document is walked again, field by field, to name every field that does not
hold what its type needs, by its JSON path, in plain words.

What clients send is read first by a plan made once per message type (`_read_plainly`):
fields by their JSON names, holding strings, whole numbers (as numbers or plain decimal
strings), booleans, plain messages, and lists of those. Google's parser asks of every field,
on every call, what kind it is; the plan knows. A document with anything else (a proto field
name, an unknown field, null, an enum, a well-known type, a duplicate key, a value of another
type, one out of range) is read by Google's parser from the start, which decides what it
means or refuses it: so the plan only ever fills a message as that parser would
(tests/unit/test_json_input.py compares the two).
"""

from __future__ import annotations

import json
from enum import Enum, auto
from typing import Any, TypeVar

from google.protobuf import json_format, message_factory
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

from zkplatform.domain.errors import FieldViolation, InvalidArgument

M = TypeVar("M", bound=Message)


def from_json(data: bytes | bytearray | str, message_class: type[M]) -> M:
    """The message, unknown fields ignored; InvalidArgument naming each field that is of the wrong type."""
    if (message := _read_plainly(data, message_class)) is not None:
        return message
    message = message_class()
    try:
        json_format.Parse(data if isinstance(data, str) else bytes(data), message, ignore_unknown_fields=True)
    except (json_format.ParseError, ValueError, RecursionError):  # not UTF-8, nested too deep
        raise _explained(data, message_class.DESCRIPTOR) from None
    return message


def _explained(data: bytes | bytearray | str, descriptor: Any) -> InvalidArgument:
    try:
        document = json.loads(data)
    except (ValueError, RecursionError):
        return InvalidArgument([FieldViolation("", "the body is not valid JSON")])
    if not isinstance(document, dict):
        return InvalidArgument([FieldViolation("", "the body must be a JSON object")])
    return InvalidArgument(_wrong_fields(document, descriptor, "") or [FieldViolation("", "not a valid message")])


def _wrong_fields(document: dict[str, Any], descriptor: Descriptor, prefix: str) -> list[FieldViolation]:
    violations: list[FieldViolation] = []
    for key, value in document.items():
        field = descriptor.fields_by_camelcase_name.get(key) or descriptor.fields_by_name.get(key)
        if field is None or value is None:
            continue  # unknown fields are ignored, null means the default
        path = f"{prefix}{field.json_name}"
        if _is_plain_message(field):
            violations += _wrong_submessages(field, value, path)
        elif not _parses(descriptor, key, value):
            violations.append(FieldViolation(path, _expected(field)))
    return violations


def _wrong_submessages(field: FieldDescriptor, value: object, path: str) -> list[FieldViolation]:
    if field.is_repeated:
        if not isinstance(value, list):
            return [FieldViolation(path, "must be a list of objects")]
        elements = [(f"{path}[{index}]", element) for index, element in enumerate(value)]
    else:
        elements = [(path, value)]
    violations: list[FieldViolation] = []
    for where, element in elements:
        if isinstance(element, dict):
            violations += _wrong_fields(element, field.message_type, f"{where}.")  # type: ignore[arg-type] # a message field
        else:
            violations.append(FieldViolation(where, "must be an object"))
    return violations


def _is_plain_message(field: FieldDescriptor) -> bool:
    """A message field of ours (not a map, not a well-known type with a JSON form of its own)."""
    message = field.message_type
    return (
        message is not None
        and not message.GetOptions().map_entry
        and not message.full_name.startswith("google.protobuf.")
    )


def _parses(descriptor: Descriptor, key: str, value: object) -> bool:
    try:
        json_format.ParseDict({key: value}, message_factory.GetMessageClass(descriptor)(), ignore_unknown_fields=True)
    except json_format.ParseError:
        return False
    return True


_INTEGERS = {
    FieldDescriptor.CPPTYPE_INT32: "from -2147483648 to 2147483647",
    FieldDescriptor.CPPTYPE_UINT32: "from 0 to 4294967295",
    FieldDescriptor.CPPTYPE_INT64: "from -9223372036854775808 to 9223372036854775807",
    FieldDescriptor.CPPTYPE_UINT64: "from 0 to 18446744073709551615",
}


def _expected(field: FieldDescriptor) -> str:
    what = _expected_value(field)
    return f"must be a list; each element {what}" if field.is_repeated else what


def _expected_value(field: FieldDescriptor) -> str:  # noqa: PLR0911 # one answer per JSON form
    cpp = field.cpp_type
    if (bounds := _INTEGERS.get(cpp)) is not None:
        return f"must be a whole number {bounds} (a JSON number or a decimal string)"
    if cpp == FieldDescriptor.CPPTYPE_BOOL:
        return "must be true or false"
    if cpp in (FieldDescriptor.CPPTYPE_FLOAT, FieldDescriptor.CPPTYPE_DOUBLE):
        return "must be a number"
    if cpp == FieldDescriptor.CPPTYPE_ENUM and field.enum_type is not None:
        return "must be one of " + ", ".join(value.name for value in field.enum_type.values)
    if field.type == FieldDescriptor.TYPE_BYTES:
        return "must be base64 text"
    if cpp == FieldDescriptor.CPPTYPE_STRING:
        return "must be a string"
    if field.message_type is not None and field.message_type.full_name == "google.protobuf.Timestamp":
        return "must be an RFC 3339 time, e.g. 2026-01-02T03:04:05Z"
    if field.message_type is not None and field.message_type.full_name == "google.protobuf.FieldMask":
        return 'must be a string of field names in lowerCamelCase separated by commas, e.g. "kind,wrappedKeys"'
    return "is not valid for its type"


class _Declined(Exception):  # not an error: the document is for Google's parser
    """The plan does not cover what the document holds."""


class _Kind(Enum):
    """What a field holds, as far as the plan reads it."""

    STRING = auto()
    STRINGS = auto()
    INTEGER = auto()  # of any width: the message refuses one out of its range
    BOOL = auto()
    MESSAGE = auto()
    MESSAGES = auto()
    UNPLANNED = auto()


# Per message type (by descriptor): each planned field's name and kind, by its JSON name.
_plans: dict[Any, dict[str, tuple[str, _Kind]]] = {}
_UNPLANNED = ("", _Kind.UNPLANNED)
_DEEPEST = 64  # Google's parser refuses messages nested 100 deep: well short of it


def _read_plainly(data: bytes | bytearray | str, message_class: type[M]) -> M | None:
    """The message the document makes, if the plan covers everything it holds; else None."""
    try:
        document = _DECODER.decode(data if isinstance(data, str) else bytes(data).decode())
        if not isinstance(document, dict):
            return None
        message = message_class()
        _fill(message, document, 1)
    except (_Declined, ValueError, TypeError, RecursionError):  # a value the message refuses, a malformed document
        return None
    return message


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    document = dict(pairs)
    if len(document) != len(pairs):
        raise _Declined  # a key twice, which Google's parser refuses
    return document


# Made once: json.loads with a hook builds a decoder on every call.
_DECODER = json.JSONDecoder(object_pairs_hook=_object)


def _fill(message: Message, document: dict[str, Any], depth: int) -> None:  # noqa: C901 # one branch per kind
    if depth > _DEEPEST:
        raise _Declined
    plan = _plans.get(message.DESCRIPTOR)
    if plan is None:
        plan = _plans[message.DESCRIPTOR] = _plan_of(message.DESCRIPTOR)
    for key, value in document.items():
        name, kind = plan.get(key, _UNPLANNED)
        if kind is _Kind.STRING and type(value) is str:
            setattr(message, name, value)  # an unpaired surrogate raises, as Google's parser refuses it
        elif kind is _Kind.INTEGER and (number := _integer(value)) is not None:
            setattr(message, name, number)  # out of the field's range raises
        elif kind is _Kind.BOOL and type(value) is bool:
            setattr(message, name, value)
        elif kind is _Kind.STRINGS and type(value) is list and all(type(element) is str for element in value):
            getattr(message, name).extend(value)
        elif kind is _Kind.MESSAGE and type(value) is dict:
            nested = getattr(message, name)
            nested.SetInParent()  # present even when empty, as Google's parser leaves it
            _fill(nested, value, depth + 1)
        elif kind is _Kind.MESSAGES and type(value) is list:
            elements = getattr(message, name)
            for element in value:
                if type(element) is not dict:
                    raise _Declined
                _fill(elements.add(), element, depth + 1)
        else:
            raise _Declined


def _integer(value: object) -> int | None:
    """A JSON number that is whole, or a plain decimal string (as int64s come); None for
    anything else (a float, a bool, a signed or spaced string), which Google's parser decides."""
    if type(value) is int:
        return value
    if type(value) is str and value.isascii() and value.isdigit():
        return int(value)
    return None


def _plan_of(descriptor: Any) -> dict[str, tuple[str, _Kind]]:
    plan: dict[str, tuple[str, _Kind]] = {}
    for field in descriptor.fields:
        kind = _Kind.UNPLANNED if field.containing_oneof is not None else _kind_of(field)
        if kind is not _Kind.UNPLANNED:
            plan[field.json_name] = (field.name, kind)
    return plan


def _kind_of(field: Any) -> _Kind:
    message = field.message_type
    if message is not None:
        if message.GetOptions().map_entry or message.file.package == "google.protobuf":
            return _Kind.UNPLANNED  # maps and well-known types have JSON forms of their own
        return _Kind.MESSAGES if field.is_repeated else _Kind.MESSAGE
    if field.type == FieldDescriptor.TYPE_STRING:
        return _Kind.STRINGS if field.is_repeated else _Kind.STRING
    if not field.is_repeated and field.cpp_type in _INTEGERS:
        return _Kind.INTEGER
    if not field.is_repeated and field.cpp_type == FieldDescriptor.CPPTYPE_BOOL:
        return _Kind.BOOL
    return _Kind.UNPLANNED  # enums, floats, bytes, repeated numbers
