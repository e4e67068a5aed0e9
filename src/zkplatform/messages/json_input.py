"""Proto3 JSON input, with errors that name the field in the caller's terms.

Google's parser stops at the first problem with a message made for debugging
("invalid literal for int() with base 10"). When it refuses a document, the
document is walked again, field by field, to name every field that does not
hold what its type needs, by its JSON path, in plain words.
"""

from __future__ import annotations

import json
from typing import Any, TypeVar

from google.protobuf import json_format, message_factory
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

from zkplatform.domain.errors import FieldViolation, InvalidArgument

M = TypeVar("M", bound=Message)


def from_json(data: bytes | bytearray | str, message_class: type[M]) -> M:
    """The message, unknown fields ignored; InvalidArgument naming each field that is of the wrong type."""
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
