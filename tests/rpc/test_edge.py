"""The behaviour every call shares, through the whole ASGI app in-process."""

from __future__ import annotations

import gc
import gzip
import json
import logging
from collections.abc import AsyncIterator, MutableMapping
from typing import Any

import httpx
import pytest
from connectrpc.request import RequestContext
from google.protobuf import timestamp_pb2

from tests.connect import BROKER_MINT, JSON, PROTO, VAULT_DELETE, Codec, brief, detail, error_of, headers
from tests.world import World
from zkplatform.app import COLLECTOR_THRESHOLDS, create_app
from zkplatform.config import Settings
from zkplatform.wiring import Platform
from zkplatform_api.platform.v1 import broker_pb2, vault_pb2
from zkplatform_api.platform.v1.vault_connect import VaultService

VALID = vault_pb2.DeleteItemRequest(vault_id="vault-1", item_id="item-1", base_version=3)
SECRET_TEXT = "db password is hunter2"


@pytest.mark.parametrize("path", [VAULT_DELETE, BROKER_MINT])
async def test_missing_protocol_version_is_invalid_argument(client: httpx.AsyncClient, codec: Codec, path: str) -> None:
    request_headers = headers(codec)
    del request_headers["Connect-Protocol-Version"]

    response = await client.post(
        path,
        content=codec.encode(VALID if path == VAULT_DELETE else broker_pb2.MintUserApiTokenRequest()),
        headers=request_headers,
    )

    assert response.status_code == 400
    error = error_of(response)
    assert error["code"] == "invalid_argument"
    assert "Connect-Protocol-Version" in error["message"]


async def test_wrong_protocol_version_is_invalid_argument(client: httpx.AsyncClient, codec: Codec) -> None:
    response = await client.post(
        VAULT_DELETE, content=codec.encode(VALID), headers=headers(codec, **{"Connect-Protocol-Version": "2"})
    )

    assert response.status_code == 400
    assert error_of(response)["code"] == "invalid_argument"


@pytest.mark.parametrize("path", ["/platform.v1.VaultService/Nope", "/platform.v1.NoSuchService/DeleteItem", "/"])
async def test_unknown_procedure_is_404_unimplemented(client: httpx.AsyncClient, codec: Codec, path: str) -> None:
    response = await client.post(path, content=codec.encode(VALID), headers=headers(codec))

    assert response.status_code == 404
    assert error_of(response)["code"] == "unimplemented"


@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE"])
async def test_other_verbs_are_405(client: httpx.AsyncClient, method: str) -> None:
    response = await client.request(method, VAULT_DELETE, headers=headers(JSON))

    assert response.status_code == 405
    assert response.headers["allow"] == "POST"


@pytest.mark.parametrize("content_type", ["text/plain", "application/xml", "application/x-www-form-urlencoded"])
async def test_unsupported_content_type_is_415(client: httpx.AsyncClient, content_type: str) -> None:
    response = await client.post(VAULT_DELETE, content=b"{}", headers=headers(JSON, **{"Content-Type": content_type}))

    assert response.status_code == 415


async def test_body_over_limit_is_resource_exhausted_before_it_is_decoded(
    client: httpx.AsyncClient, codec: Codec, world: World
) -> None:
    # Not a message at all: the size is what answers, once the caller is known.
    request_headers = headers(codec, world.token("alice"))

    response = await client.post(VAULT_DELETE, content=b"x" * (64 * 1024 + 1), headers=request_headers)

    assert response.status_code == 429
    assert error_of(response)["code"] == "resource_exhausted"


async def test_body_over_limit_from_an_unknown_caller_is_unauthenticated(client: httpx.AsyncClient) -> None:
    response = await client.post(VAULT_DELETE, content=b"x" * (64 * 1024 + 1), headers=headers(JSON))

    assert response.status_code == 401  # an unauthenticated caller learns nothing of the limits


async def test_streamed_body_over_limit_without_content_length_is_refused(
    client: httpx.AsyncClient, world: World
) -> None:
    async def chunks() -> AsyncIterator[bytes]:
        for _ in range(100):
            yield b"x" * 1024

    response = await client.post(VAULT_DELETE, content=chunks(), headers=headers(JSON, world.token("alice")))

    assert "content-length" not in response.request.headers
    assert response.status_code == 429
    assert error_of(response)["code"] == "resource_exhausted"


async def test_body_at_the_limit_is_read(client: httpx.AsyncClient, world: World) -> None:
    body = json.dumps(
        {"vaultId": "vault-1", "itemId": "item-1", "baseVersion": 3, "pad": "x" * (64 * 1024 - 80)}
    ).encode()
    assert len(body) <= 64 * 1024

    response = await client.post(VAULT_DELETE, content=body, headers=headers(JSON, world.token("alice")))

    assert error_of(response)["code"] == "permission_denied"  # got past the edge, auth and validation


async def test_limit_is_configurable(platform: Platform, world: World) -> None:
    app = create_app(Settings(max_body_bytes=100), platform=platform)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://testserver") as client:
        body = b"{" + b" " * 100 + b"}"
        response = await client.post(VAULT_DELETE, content=body, headers=headers(JSON, world.token("alice")))

    assert error_of(response)["code"] == "resource_exhausted"


async def test_malformed_fields_answer_bad_request_with_every_field(
    client: httpx.AsyncClient, codec: Codec, world: World
) -> None:
    request = vault_pb2.DeleteItemRequest(vault_id="-starts-with-dash", item_id="", base_version=0)

    response = await client.post(
        VAULT_DELETE, content=codec.encode(request), headers=headers(codec, world.token("alice"))
    )

    assert response.status_code == 400
    error = error_of(response)
    assert error["code"] == "invalid_argument"
    violations = detail(error, "google.rpc.BadRequest")["fieldViolations"]
    assert {v["field"] for v in violations} == {"vaultId", "itemId", "baseVersion"}
    assert all(v["description"] for v in violations)


async def test_malformed_json_is_invalid_argument(client: httpx.AsyncClient, world: World) -> None:
    response = await client.post(VAULT_DELETE, content=b'{"vaultId": ', headers=headers(JSON, world.token("alice")))

    assert response.status_code == 400
    assert error_of(response)["code"] == "invalid_argument"


async def test_malformed_binary_is_invalid_argument(client: httpx.AsyncClient, world: World) -> None:
    response = await client.post(VAULT_DELETE, content=b"\xff\xff\xff", headers=headers(PROTO, world.token("alice")))

    assert response.status_code == 400
    assert error_of(response)["code"] == "invalid_argument"


async def test_unknown_json_fields_are_ignored(client: httpx.AsyncClient, world: World) -> None:
    body = {"vaultId": "acme-private", "itemId": "item-1", "baseVersion": "1", "somethingNew": [1, 2]}

    response = await client.post(VAULT_DELETE, json=body, headers=headers(JSON, world.token("alice")))

    assert response.status_code == 200
    assert response.json()["item"]["deleted"] is True


@pytest.mark.parametrize("coding", ["gzip", "GZIP", "GZip"])
async def test_gzip_request_body_is_accepted(client: httpx.AsyncClient, world: World, coding: str) -> None:
    """Content codings are case-insensitive (RFC 9110 8.4.1)."""
    body = gzip.compress(json.dumps({"vaultId": "acme-private", "itemId": "item-1", "baseVersion": 1}).encode())

    response = await client.post(
        VAULT_DELETE, content=body, headers=headers(JSON, world.token("alice"), **{"Content-Encoding": coding})
    )

    assert response.status_code == 200, response.text
    assert response.json()["item"]["deleted"] is True


async def test_a_grpc_web_message_compressed_as_gzip_in_upper_case_is_read(
    client: httpx.AsyncClient, world: World
) -> None:
    message = gzip.compress(
        vault_pb2.DeleteItemRequest(vault_id="acme-private", item_id="item-1", base_version=1).SerializeToString()
    )
    grpc_web = {"Content-Type": "application/grpc-web+proto", "X-Grpc-Web": "1", "Grpc-Encoding": "GZIP"}
    authorization = {"Authorization": f"Bearer {world.token('alice')}"}

    response = await client.post(
        VAULT_DELETE, content=b"\x01" + len(message).to_bytes(4, "big") + message, headers=grpc_web | authorization
    )

    assert response.status_code == 200
    assert b"grpc-status:0" in response.content.replace(b" ", b""), response.content


async def test_missing_protocol_version_is_refused_before_authentication(client: httpx.AsyncClient) -> None:
    response = await client.post(VAULT_DELETE, content=b"{}", headers={"Content-Type": "application/json"})

    assert response.status_code == 400
    assert "Connect-Protocol-Version" in error_of(response)["message"]


async def test_health_needs_no_protocol_header(client: httpx.AsyncClient) -> None:
    """Load balancers probe health with whatever headers they send; only the platform's calls require it."""
    response = await client.post(
        "/grpc.health.v1.Health/Check", content=b"{}", headers={"Content-Type": "application/json"}
    )

    assert response.status_code == 200, response.text
    assert response.json() == {"status": "SERVING"}


async def test_startup_moves_the_live_heap_out_of_the_collector_and_sets_its_thresholds(platform: Platform) -> None:
    app = create_app(Settings(store_url="memory:"), platform=platform)
    phases = iter([{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}])
    frozen_at_startup: list[int] = []

    async def receive() -> dict[str, str]:
        return next(phases)

    async def send(message: MutableMapping[str, Any]) -> None:
        if message["type"] == "lifespan.startup.complete":
            frozen_at_startup.append(gc.get_freeze_count())

    gc.unfreeze()
    thresholds = gc.get_threshold()
    try:
        await app({"type": "lifespan"}, receive, send)
        assert gc.get_threshold() == COLLECTOR_THRESHOLDS
    finally:
        gc.unfreeze()
        gc.set_threshold(*thresholds)

    assert frozen_at_startup
    assert frozen_at_startup[0] > 0


async def test_healthz(client: httpx.AsyncClient) -> None:
    response = await client.get("/healthz")

    assert response.status_code == 200
    assert response.text == "ok\n"


class _Failing(VaultService):
    async def delete_item(
        self,
        request: vault_pb2.DeleteItemRequest,
        ctx: RequestContext[vault_pb2.DeleteItemRequest, vault_pb2.DeleteItemResponse],
        /,
    ) -> vault_pb2.DeleteItemResponse:
        raise RuntimeError(SECRET_TEXT)


class _Answering(VaultService):
    async def delete_item(
        self,
        request: vault_pb2.DeleteItemRequest,
        ctx: RequestContext[vault_pb2.DeleteItemRequest, vault_pb2.DeleteItemResponse],
        /,
    ) -> vault_pb2.DeleteItemResponse:
        item = vault_pb2.Item(item_id=request.item_id, vault_id=request.vault_id, version=4, deleted=True)
        item.updated_at.CopyFrom(timestamp_pb2.Timestamp(seconds=1_800_000_000))
        return vault_pb2.DeleteItemResponse(item=item, cursor=vault_pb2.Cursor(vault_id=request.vault_id, sequence=9))


async def test_unexpected_exception_is_internal_and_its_text_stays_in_the_log(
    codec: Codec, caplog: pytest.LogCaptureFixture, platform: Platform, world: World
) -> None:
    app = create_app(Settings(), platform=platform, vault=_Failing())
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://testserver") as client:
        with caplog.at_level(logging.ERROR):
            response = await client.post(
                VAULT_DELETE, content=codec.encode(VALID), headers=headers(codec, world.token("alice"))
            )

    assert response.status_code == 500
    error = error_of(response)
    assert brief(error) == {"code": "internal", "message": "internal error", "reason": "INTERNAL"}
    assert SECRET_TEXT not in response.text
    assert SECRET_TEXT in caplog.text  # the operator still learns what happened


async def test_json_responses_are_compact(platform: Platform, world: World) -> None:
    app = create_app(Settings(), platform=platform, vault=_Answering())
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://testserver") as client:
        response = await client.post(
            VAULT_DELETE, content=JSON.encode(VALID), headers=headers(JSON, world.token("alice"))
        )

    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert b"\n" not in response.content
    assert b" " not in response.content
    body = json.loads(response.content)
    assert body["item"]["version"] == "4"  # int64 as a string
    assert body["item"]["updatedAt"] == "2027-01-15T08:00:00Z"
    assert body["cursor"] == {"vaultId": "vault-1", "sequence": "9"}


async def test_binary_responses_use_the_proto_codec(platform: Platform, world: World) -> None:
    codec = PROTO
    app = create_app(Settings(), platform=platform, vault=_Answering())
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://testserver") as client:
        response = await client.post(
            VAULT_DELETE, content=codec.encode(VALID), headers=headers(codec, world.token("alice"))
        )

    assert response.headers["content-type"] == "application/proto"
    assert codec.decode(response.content, vault_pb2.DeleteItemResponse).cursor.sequence == 9
