"""Messages filled with random values of every kind their fields take, to compare two ways of
encoding or decoding them (tests/unit/test_json_output.py, test_json_input.py)."""

from __future__ import annotations

import random
from typing import Any

from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

from zkplatform_api.platform.v1 import broker_pb2, directory_pb2, vault_pb2

_STRINGS = ("", "a", 'é\u00e9 "quoted" \\ \n', "tok_ünïcode \U0001f511", "x" * 40)


def api_messages(side: str) -> list[tuple[str, Descriptor]]:
    """Every request (`side` "input") or response ("output") message of the API's RPCs, by name."""
    found = {
        getattr(method, f"{side}_type").full_name: getattr(method, f"{side}_type")
        for module in (vault_pb2, broker_pb2, directory_pb2)
        for service in module.DESCRIPTOR.services_by_name.values()
        for method in service.methods
    }
    return sorted(found.items())


def filled(message: Message, rng: random.Random, depth: int = 0) -> Message:
    """The message with most of its fields set, to values of every kind its fields take (long,
    non-ASCII, at the ends of their ranges, unknown enum numbers), nested four deep."""
    for field in message.DESCRIPTOR.fields:
        if rng.random() < 0.2:  # some fields left unset
            continue
        if field.is_repeated and not _is_map(field):
            for _ in range(rng.randrange(3)):
                _add(message, field, rng, depth)
        elif field.message_type is not None and not _is_map(field):
            if depth < 4:  # deep enough for every nesting of the API
                _fill_nested(getattr(message, field.name), field.message_type, rng, depth)
        elif not _is_map(field):
            setattr(message, field.name, _scalar(field, rng))
    return message


def _fill_nested(message: Message, descriptor: Any, rng: random.Random, depth: int) -> None:
    if descriptor.full_name == "google.protobuf.Timestamp":
        message.seconds = rng.randrange(-62135596800, 253402300800)  # type: ignore[attr-defined]
        message.nanos = rng.choice((0, 1, 1000, 1_000_000, 999_999_999))  # type: ignore[attr-defined]
    else:
        message.SetInParent()
        filled(message, rng, depth + 1)


def _add(message: Message, field: Any, rng: random.Random, depth: int) -> None:
    values = getattr(message, field.name)
    if field.message_type is not None:
        _fill_nested(values.add(), field.message_type, rng, depth)
    else:
        values.append(_scalar(field, rng))


def _scalar(field: Any, rng: random.Random) -> Any:  # noqa: PLR0911 # one value per kind
    kind = field.type
    if kind == FieldDescriptor.TYPE_STRING:
        return rng.choice(_STRINGS)
    if kind == FieldDescriptor.TYPE_BYTES:
        return rng.randbytes(rng.randrange(5))
    if kind == FieldDescriptor.TYPE_BOOL:
        return rng.random() < 0.5
    if kind == FieldDescriptor.TYPE_ENUM:
        numbers = [value.number for value in field.enum_type.values]
        return rng.choice([*numbers, max(numbers) + 7])  # an unknown number too: the enums are open
    if kind in (FieldDescriptor.TYPE_INT64, FieldDescriptor.TYPE_SINT64, FieldDescriptor.TYPE_SFIXED64):
        return rng.choice((0, 1, -1, 2**63 - 1, -(2**63)))
    if kind in (FieldDescriptor.TYPE_UINT64, FieldDescriptor.TYPE_FIXED64):
        return rng.choice((0, 1, 2**64 - 1))
    if kind in (FieldDescriptor.TYPE_UINT32, FieldDescriptor.TYPE_FIXED32):
        return rng.choice((0, 1, 2**32 - 1))
    return rng.choice((0, 1, -1, 2**31 - 1, -(2**31)))


def _is_map(field: Any) -> bool:
    return field.message_type is not None and field.message_type.GetOptions().map_entry
