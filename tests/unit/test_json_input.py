"""JSON requests read by the plan make the message Google's parser makes, and whatever the plan
does not cover goes to that parser, which reads or refuses it as it always did."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from google.protobuf import json_format, message_factory
from google.protobuf.message import Message

from tests.filled import api_messages, filled
from zkplatform.domain.errors import InvalidArgument
from zkplatform.messages.json_input import _read_plainly, from_json
from zkplatform_api.platform.v1 import broker_pb2, vault_pb2

_REQUESTS = api_messages("input")

# Documents the plan must leave to Google's parser, or refuse as it does: proto names, unknown
# fields, null, numbers in every spelling, types that do not fit, duplicates, odd strings.
_ODD_DOCUMENTS = (
    '{"vault_id": "v", "itemId": "i"}',
    '{"vaultId": "v", "unknown": {"a": [1, 2]}}',
    '{"vaultId": null, "itemId": "i"}',
    '{"baseVersion": 1.0}',
    '{"baseVersion": 1.5}',
    '{"baseVersion": "-1"}',
    '{"baseVersion": " 1"}',
    '{"baseVersion": "1_0"}',
    '{"baseVersion": "\\u0661"}',
    '{"baseVersion": "99999999999999999999"}',
    '{"baseVersion": true}',
    '{"baseVersion": 1e3}',
    '{"vaultId": 5}',
    '{"vaultId": "\\ud800"}',
    '{"vaultId": "\\ud83d\\ude00"}',
    '{"vaultId": "a", "vaultId": "b"}',
    '{"vaultId": "v", "vault_id": "w"}',
    '["vaultId"]',
    '"vaultId"',
    "{}",
    '{"vaultId": "v"',
    "\ufeff{}",
    '{"vaultId": NaN}',
    '{"requestedScopes": ["a", 1]}',
    '{"requestedScopes": "a"}',
    '{"requestedScopes": ["a", null]}',
    '{"requestedTtlSeconds": 2147483648}',
    '{"requestedTtlSeconds": "300"}',
    '{"encryptedPayload": {}, "wrappedKeys": []}',
    '{"encryptedPayload": {"version": "1", "alg": "A"}, "wrappedKeys": [{"recipientId": "r"}, {}]}',
    '{"encryptedPayload": [], "wrappedKeys": {}}',
    '{"wrappedKeys": [null]}',
    '{"updateMask": "kind,wrappedKeys", "kind": "k"}',
    '{"showDeleted": true, "pageSize": 0}',
    '{"showDeleted": "true"}',
    '{"showDeleted": 1}',
)


def _google(document: str | bytes, message_class: type[Message]) -> Message | type[Exception]:
    message = message_class()
    try:
        json_format.Parse(document, message, ignore_unknown_fields=True)
    except (json_format.ParseError, ValueError, RecursionError) as error:
        return type(error)
    return message


def _ours(document: str | bytes, message_class: type[Message]) -> Message | type[Exception]:
    try:
        return from_json(document, message_class)
    except InvalidArgument:
        return json_format.ParseError


@pytest.mark.parametrize(("name", "descriptor"), _REQUESTS, ids=[name for name, _ in _REQUESTS])
def test_what_clients_send_is_read_by_the_plan_as_google_reads_it(name: str, descriptor: Any) -> None:
    message_class = message_factory.GetMessageClass(descriptor)
    rng = random.Random(name)  # noqa: S311 # values to read, seeded: the same every run
    planned = 0
    for _ in range(50):
        document = json_format.MessageToJson(filled(message_class(), rng), indent=None)
        read = _read_plainly(document.encode(), message_class)
        planned += read is not None
        assert _ours(document.encode(), message_class) == _google(document, message_class)
        if read is not None:
            assert read == _google(document, message_class)
    if not any(
        field.message_type and field.message_type.file.package == "google.protobuf" for field in descriptor.fields
    ):
        assert planned, "the plan declined every document of a message it covers"


@pytest.mark.parametrize("document", _ODD_DOCUMENTS)
@pytest.mark.parametrize(
    "message_class",
    [
        vault_pb2.DeleteItemRequest,
        vault_pb2.CreateItemRequest,
        vault_pb2.UpdateItemRequest,
        vault_pb2.ListItemsRequest,
        broker_pb2.MintUserApiTokenRequest,
    ],
)
def test_odd_documents_are_read_or_refused_as_google_does(document: str, message_class: type[Message]) -> None:
    assert _ours(document.encode(), message_class) == _google(document.encode(), message_class)


def test_a_document_that_is_not_utf8_is_refused() -> None:
    document = json.dumps({"vaultId": "é"}).encode("utf-16")
    assert _read_plainly(document, vault_pb2.DeleteItemRequest) is None
    with pytest.raises(InvalidArgument):
        from_json(document, vault_pb2.DeleteItemRequest)
