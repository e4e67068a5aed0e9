"""The protovalidate rules declared in the protos, as domain field violations."""

from __future__ import annotations

from typing import Any

import protovalidate
from google.protobuf.message import Message

from zkplatform.domain.errors import FieldViolation
from zkplatform.messages.convert import UPDATABLE, updated_fields
from zkplatform_api.platform.v1 import vault_pb2

_validator = protovalidate.Validator()


def violations_of(message: Message) -> list[FieldViolation]:
    """Every rule the message breaks, each named by its JSON field path (or "" for the message)."""
    violations = [
        FieldViolation(
            field=_field_path(message.DESCRIPTOR, violation.proto),
            description=violation.proto.message or violation.proto.rule_id,
        )
        for violation in _validator.collect_violations(message)
    ]
    if isinstance(message, vault_pb2.UpdateItemRequest):
        violations += _missing_updates(message)
    return violations


def _missing_updates(request: vault_pb2.UpdateItemRequest) -> list[FieldViolation]:
    """The fields the update must write but the request leaves empty. Not a protovalidate rule:
    whether they are required depends on `update_mask`, and a message rule added to the request
    would refuse nothing a client sends that the field rules it replaces did not refuse already,
    yet read as a breaking change to the contract gate (scripts/check_rules.py)."""
    fields = updated_fields(request)
    missing = {
        "kind": ("value is required", request.kind == ""),
        "encrypted_payload": ("value is required", not request.HasField("encrypted_payload")),
        "wrapped_keys": ("must contain at least 1 item(s)", not request.wrapped_keys),
    }  # title_hash is optional: empty clears it
    return [
        FieldViolation(UPDATABLE[name], f"{what} when updateMask is empty or names it")
        for name, (what, empty) in missing.items()
        if empty and name in fields
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
