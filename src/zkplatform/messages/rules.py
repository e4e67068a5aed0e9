"""The protovalidate rules declared in the protos, as domain field violations."""

from __future__ import annotations

from typing import Any

import protovalidate
from google.protobuf.message import Message

from zkplatform.domain.errors import FieldViolation

_validator = protovalidate.Validator()


def violations_of(message: Message) -> list[FieldViolation]:
    """Every rule the message breaks, each named by its JSON field path (or "" for the message)."""
    return [
        FieldViolation(
            field=_field_path(message.DESCRIPTOR, violation.proto),
            description=violation.proto.message or violation.proto.rule_id,
        )
        for violation in _validator.collect_violations(message)
    ]


def _field_path(descriptor: Any, proto: Any) -> str:
    if proto.field is None:
        # A message rule about one field is named `<field>.<rule>`: name that field.
        field = descriptor.fields_by_name.get(proto.rule_id.partition(".")[0])
        return "" if field is None else str(field.json_name)
    names = []
    for element in proto.field.elements:
        field = descriptor.fields_by_name.get(element.field_name) if descriptor is not None else None
        name = field.json_name if field is not None else element.field_name
        descriptor = field.message_type if field is not None else None
        if (subscript := element.subscript) is not None:
            key = subscript.value
            name = f"{name}[{key!r}]" if isinstance(key, str) else f"{name}[{key}]"
        names.append(name)
    return ".".join(names)
