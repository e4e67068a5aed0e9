"""The contract's one rule for strings no store can hold: every string field a request (or an
imported Item) carries refuses U+0000, by a pattern, a list of values or `no_nul`."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from google.protobuf import message_factory
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

from zkplatform.messages.rules import violations_of
from zkplatform_api.platform.v1 import broker_pb2, vault_pb2

CHECKED: list[type[Message]] = [
    message
    for module in (vault_pb2, broker_pb2)
    for message in vars(module).values()
    if isinstance(message, type) and issubclass(message, Message) and message.__name__.endswith("Request")
]
CHECKED.append(vault_pb2.Item)


def string_fields(descriptor: Any, path: tuple[FieldDescriptor, ...] = ()) -> Iterator[tuple[FieldDescriptor, ...]]:
    """Every string field of the message type, nested platform.v1 messages included (a descriptor is
    `Any`: protobuf's stubs type it as a union of its two implementations)."""
    for field in descriptor.fields:
        if field.type == FieldDescriptor.TYPE_STRING:
            yield (*path, field)
        elif (nested := field.message_type) is not None and nested.full_name.startswith("platform.v1."):
            yield from string_fields(nested, (*path, field))


def with_value(descriptor: Descriptor, path: tuple[FieldDescriptor, ...], value: str) -> Message:
    """A message of the type with `value` at `path` (in the first element of a repeated field)."""
    root = target = message_factory.GetMessageClass(descriptor)()
    *parents, leaf = path
    for field in parents:
        repeated = getattr(target, field.name)
        target = repeated.add() if field.is_repeated else repeated
    if leaf.is_repeated:
        getattr(target, leaf.name).append(value)
    else:
        setattr(target, leaf.name, value)
    return root


def json_path(path: tuple[FieldDescriptor, ...]) -> str:
    return ".".join(f"{f.json_name}[0]" if f.is_repeated else f.json_name for f in path)


CASES = [(m.DESCRIPTOR, path) for m in CHECKED for path in string_fields(m.DESCRIPTOR)]


@pytest.mark.parametrize(("descriptor", "path"), CASES, ids=[f"{d.name}.{json_path(p)}" for d, p in CASES])
@pytest.mark.parametrize("value", ["\x00", "a\x00", "A256GCM\x00"], ids=["nul", "trailing", "listed-then-nul"])
def test_every_string_field_refuses_nul(descriptor: Descriptor, path: tuple[FieldDescriptor, ...], value: str) -> None:
    violations = violations_of(with_value(descriptor, path, value))

    assert json_path(path) in [v.field for v in violations]
