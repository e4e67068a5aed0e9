"""The JSON codec's output is json_format's, byte for byte: on every message the API answers
with, filled with every kind of value its fields take, and on messages the plan leaves to
json_format (maps, well-known types with JSON forms of their own)."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from google.protobuf import duration_pb2, json_format, message_factory, struct_pb2, timestamp_pb2
from google.rpc import error_details_pb2

from tests.filled import api_messages, filled
from zkplatform.messages.json_output import message_to_dict
from zkplatform.rpc.encoding.codec import CompactJSONCodec
from zkplatform_api.grpc.health.v1 import health_pb2
from zkplatform_api.platform.v1 import vault_pb2

_ANSWERED = api_messages("output")


def _encoded(as_dict: Any) -> str:
    return json.dumps(as_dict, separators=(",", ":"), ensure_ascii=False)


@pytest.mark.parametrize(("name", "descriptor"), _ANSWERED, ids=[name for name, _ in _ANSWERED])
def test_every_answer_is_written_as_json_format_writes_it(name: str, descriptor: Any) -> None:
    rng = random.Random(name)  # noqa: S311 # values to write, seeded: the same every run
    message_class = message_factory.GetMessageClass(descriptor)
    for _ in range(50):
        message = filled(message_class(), rng)
        assert _encoded(message_to_dict(message)) == _encoded(json_format.MessageToDict(message))


def test_messages_the_plan_does_not_cover_are_written_by_json_format() -> None:
    info = error_details_pb2.ErrorInfo(reason="R", domain="d", metadata={"b": "2", "a": "1"})  # a map
    retry = error_details_pb2.RetryInfo(retry_delay=duration_pb2.Duration(seconds=1, nanos=500_000_000))
    value = struct_pb2.Value(struct_value=struct_pb2.Struct(fields={"n": struct_pb2.Value(number_value=1.5)}))
    health = health_pb2.HealthCheckResponse(status=health_pb2.HealthCheckResponse.SERVING)
    stamp = timestamp_pb2.Timestamp(seconds=1, nanos=20_000_000)
    for message in (info, retry, value, health, stamp, retry.retry_delay):
        assert _encoded(message_to_dict(message)) == _encoded(json_format.MessageToDict(message))


def test_the_codec_writes_compact_json() -> None:
    cursor = vault_pb2.Cursor(vault_id="v-é", sequence=3, epoch="e")
    assert CompactJSONCodec().encode(cursor) == '{"vaultId":"v-é","sequence":"3","epoch":"e"}'.encode()
