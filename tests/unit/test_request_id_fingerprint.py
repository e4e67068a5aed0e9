"""What makes two calls with one request id the same request: the method and every other
field, whatever carried them (JSON or binary), and nothing the server does not know."""

from __future__ import annotations

from google.protobuf import json_format

from zkplatform.messages.request_ids import request_id_of
from zkplatform_api.platform.v1 import broker_pb2, vault_pb2

ID = "0B5C3A52-8D0E-4F3A-9C1B-6D7E8F9A0B1C"


def delete(base_version: int = 1, request_id: str = "") -> vault_pb2.DeleteItemRequest:
    return vault_pb2.DeleteItemRequest(vault_id="v1", item_id="i1", base_version=base_version, request_id=request_id)


def test_no_request_id_is_none() -> None:
    assert request_id_of(delete()) is None


def test_the_id_is_lower_case_and_the_fingerprint_ignores_it() -> None:
    upper, lower = request_id_of(delete(request_id=ID)), request_id_of(delete(request_id=ID.lower()))

    assert upper is not None
    assert upper == lower
    assert upper.value == ID.lower()


def test_json_and_binary_of_one_request_are_one_request() -> None:
    sent = delete(request_id=ID)
    body = {"vaultId": "v1", "itemId": "i1", "baseVersion": "1", "requestId": ID}
    from_json = json_format.ParseDict(body, vault_pb2.DeleteItemRequest())
    from_binary = vault_pb2.DeleteItemRequest.FromString(sent.SerializeToString())

    assert request_id_of(from_json) == request_id_of(from_binary) == request_id_of(sent)


def test_fields_the_server_does_not_know_change_nothing() -> None:
    newer = vault_pb2.DeleteItemRequest.FromString(delete(request_id=ID).SerializeToString() + b"\xa0\x06\x01")

    assert request_id_of(newer) == request_id_of(delete(request_id=ID))


def test_another_field_value_or_method_is_another_request() -> None:
    first = request_id_of(delete(request_id=ID))
    assert first is not None
    revoke = request_id_of(broker_pb2.RevokeTokenRequest(request_id=ID))
    assert revoke is not None
    empty_delete = request_id_of(vault_pb2.DeleteItemRequest(request_id=ID))
    assert empty_delete is not None

    assert request_id_of(delete(base_version=2, request_id=ID)) != first
    # The same bytes (none but the id) in two methods' requests are two requests.
    assert revoke.fingerprint != empty_delete.fingerprint


def masked(*paths: str) -> vault_pb2.UpdateItemRequest:
    request = vault_pb2.UpdateItemRequest(vault_id="v1", item_id="i1", kind="note", base_version=1, request_id=ID)
    request.update_mask.paths.extend(paths)
    return request


def test_an_update_mask_is_a_set_of_fields() -> None:
    one = request_id_of(masked("kind", "title_hash"))
    empty = masked()
    empty.update_mask.SetInParent()  # present, naming no field (JSON: "updateMask": "")

    assert request_id_of(masked("title_hash", "kind")) == one
    assert request_id_of(masked("kind")) != one
    # An empty mask names every field, as no mask does.
    assert empty.HasField("update_mask")
    assert request_id_of(empty) == request_id_of(masked())
