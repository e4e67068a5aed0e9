"""Every field of platform.v1 says how it behaves (`google.api.field_behavior`, AIP-203), as
generated clients in other languages read it: what a request must carry, what only answers carry."""

from __future__ import annotations

import importlib
from typing import Any

import pytest
from google.protobuf import descriptor_pool
from google.protobuf.descriptor import Descriptor

from zkplatform_api.platform.v1 import broker_pb2, vault_pb2

# By name: googleapis-common-protos has no type stubs.
importlib.import_module("google.api.field_behavior_pb2")
FIELD_BEHAVIOR: Any = descriptor_pool.Default().FindExtensionByName("google.api.field_behavior")
REQUIRED, OPTIONAL, OUTPUT_ONLY = (
    FIELD_BEHAVIOR.enum_type.values_by_name[n].number for n in ("REQUIRED", "OPTIONAL", "OUTPUT_ONLY")
)
BASIC = {REQUIRED, OPTIONAL, OUTPUT_ONLY}

MESSAGES: list[Descriptor] = [
    message for module in (vault_pb2, broker_pb2) for message in module.DESCRIPTOR.message_types_by_name.values()
]
FIELDS = [(message, field) for message in MESSAGES for field in message.fields]


def behavior(field: Any) -> set[int]:
    return set(field.GetOptions().Extensions[FIELD_BEHAVIOR])


@pytest.mark.parametrize(("message", "field"), FIELDS, ids=[f"{m.name}.{f.name}" for m, f in FIELDS])
def test_every_field_has_exactly_one_of_required_optional_output_only(message: Descriptor, field: Any) -> None:
    assert len(behavior(field) & BASIC) == 1, behavior(field)


def test_requests_take_no_output_only_field_and_answers_hold_nothing_else() -> None:
    requests = [m for m in MESSAGES if m.name.endswith("Request")]
    responses = [m for m in MESSAGES if m.name.endswith("Response")]
    assert len(requests) == len(responses) == 12

    assert [f.full_name for m in requests for f in m.fields if OUTPUT_ONLY in behavior(f)] == []
    assert [f.full_name for m in responses for f in m.fields if behavior(f) != {OUTPUT_ONLY}] == []
