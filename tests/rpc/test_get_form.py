"""The Connect GET form at the edge: which procedures take GET, what a GET must
carry, and the checks a GET goes through like a POST (in-process)."""

from __future__ import annotations

import base64
import json

import httpx
import pytest
from google.protobuf import json_format
from google.protobuf.message import Message

from tests.connect import JSON, PROTO, Codec, detail, error_of
from tests.world import World
from zkplatform.app import create_app
from zkplatform.config import Settings
from zkplatform.domain import tokens
from zkplatform.wiring import Platform
from zkplatform_api.platform.v1 import vault_pb2

GET_ITEM = "/platform.v1.VaultService/GetItem"
LIST_ITEMS = "/platform.v1.VaultService/ListItems"
# The procedures declared NO_SIDE_EFFECTS, as docs/api.md lists them.
GET_CAPABLE = [
    GET_ITEM,
    LIST_ITEMS,
    "/platform.v1.VaultService/ListChanges",
    "/platform.v1.VaultService/ListVaults",
    "/platform.v1.VaultService/GetVault",
    "/platform.v1.BrokerService/ListTokens",
    "/platform.v1.DirectoryService/GetRecipientKeys",
    "/platform.v1.DirectoryService/ListKeyLog",
]
POST_ONLY = [
    "/platform.v1.VaultService/DeleteItem",
    "/platform.v1.VaultService/CreateItem",
    "/platform.v1.VaultService/UpdateItem",
    "/platform.v1.VaultService/WatchChanges",
    "/platform.v1.BrokerService/MintUserApiToken",
    "/platform.v1.BrokerService/RevokeToken",
    "/platform.v1.DirectoryService/PublishDevice",
    "/platform.v1.DirectoryService/RevokeDevice",
    "/platform.v1.DirectoryService/ResetPrincipal",
    "/grpc.health.v1.Health/Check",
]
READ = vault_pb2.GetItemRequest(vault_id="acme-shared", item_id="item-1")


def query(message: Message, codec: Codec = JSON, **extra: str) -> dict[str, str]:
    """The query of a Connect GET: the message as JSON, or base64url binary."""
    if codec is JSON:
        params = {"encoding": "json", "message": json_format.MessageToJson(message, indent=None)}
    else:
        encoded = base64.urlsafe_b64encode(message.SerializeToString()).rstrip(b"=").decode()
        params = {"encoding": "proto", "base64": "1", "message": encoded}
    return {"connect": "v1", **params, **extra}


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def test_get_reads_an_item_in_either_encoding(client: httpx.AsyncClient, codec: Codec, world: World) -> None:
    response = await client.get(GET_ITEM, params=query(READ, codec), headers=bearer(world.token("bob")))

    assert response.status_code == 200, response.text
    item = codec.decode(response.content, vault_pb2.GetItemResponse).item
    assert (item.vault_id, item.item_id, item.version) == ("acme-shared", "item-1", 1)
    assert response.headers["cache-control"] == "no-store"


async def test_get_lists_items(client: httpx.AsyncClient, codec: Codec, world: World) -> None:
    listing = vault_pb2.ListItemsRequest(vault_id="acme-shared", page_size=2)

    response = await client.get(LIST_ITEMS, params=query(listing, codec), headers=bearer(world.token("bob")))

    assert response.status_code == 200, response.text
    answer = codec.decode(response.content, vault_pb2.ListItemsResponse)
    assert [i.item_id for i in answer.items] == ["item-1", "item-2"]
    assert answer.next_page_token
    assert response.headers["cache-control"] == "no-store"


async def test_get_and_post_answer_the_same(client: httpx.AsyncClient, codec: Codec, world: World) -> None:
    got = await client.get(GET_ITEM, params=query(READ, codec), headers=bearer(world.token("bob")))
    posted = await client.post(
        GET_ITEM,
        content=codec.encode(READ),
        headers={"Content-Type": codec.content_type, "Connect-Protocol-Version": "1", **bearer(world.token("bob"))},
    )

    assert got.status_code == posted.status_code == 200
    assert got.content == posted.content


async def test_an_ordinary_get_revokes_nothing(client: httpx.AsyncClient, world: World) -> None:
    """The token-in-URL guard reads every query value, the message included: an
    ordinary message is no leak."""
    for _ in range(2):  # a revoked token would fail the second time
        response = await client.get(GET_ITEM, params=query(READ), headers=bearer(world.token("bob")))
        assert response.status_code == 200, response.text


@pytest.mark.parametrize("path", GET_CAPABLE)
@pytest.mark.parametrize("method", ["PUT", "DELETE", "PATCH", "HEAD"])
async def test_other_methods_on_a_get_capable_procedure_allow_get_and_post(
    client: httpx.AsyncClient, path: str, method: str
) -> None:
    response = await client.request(method, path, params=query(READ))

    assert response.status_code == 405
    assert response.headers["allow"] == "GET, POST"


@pytest.mark.parametrize("path", POST_ONLY)
async def test_get_on_a_procedure_with_side_effects_is_405_post_only(client: httpx.AsyncClient, path: str) -> None:
    response = await client.get(path, params=query(READ))

    assert response.status_code == 405
    assert response.headers["allow"] == "POST"


async def test_get_without_connect_v1_is_invalid_argument(client: httpx.AsyncClient, world: World) -> None:
    params = query(READ)
    del params["connect"]

    response = await client.get(GET_ITEM, params=params, headers=bearer(world.token("bob")))

    assert response.status_code == 400
    error = error_of(response)
    assert error["code"] == "invalid_argument"
    assert "connect=v1" in error["message"]


async def test_the_protocol_header_stands_for_connect_v1(client: httpx.AsyncClient, world: World) -> None:
    params = query(READ)
    del params["connect"]

    response = await client.get(
        GET_ITEM, params=params, headers={"Connect-Protocol-Version": "1", **bearer(world.token("bob"))}
    )

    assert response.status_code == 200, response.text


@pytest.mark.parametrize("version", ["v2", "1", ""])
async def test_get_with_another_connect_version_is_invalid_argument(
    client: httpx.AsyncClient, world: World, version: str
) -> None:
    response = await client.get(GET_ITEM, params=query(READ, connect=version), headers=bearer(world.token("bob")))

    assert response.status_code == 400
    assert error_of(response)["code"] == "invalid_argument"


async def test_protocol_version_is_checked_before_the_token(client: httpx.AsyncClient) -> None:
    params = query(READ)
    del params["connect"]

    response = await client.get(GET_ITEM, params=params)

    assert error_of(response)["code"] == "invalid_argument"


async def test_get_without_a_token_is_unauthenticated(client: httpx.AsyncClient) -> None:
    response = await client.get(GET_ITEM, params=query(READ))

    assert response.status_code == 401
    assert error_of(response)["code"] == "unauthenticated"


async def test_get_without_a_message_is_invalid_argument(client: httpx.AsyncClient, world: World) -> None:
    params = query(READ)
    del params["message"]

    response = await client.get(GET_ITEM, params=params, headers=bearer(world.token("bob")))

    assert response.status_code == 400
    assert error_of(response)["code"] == "invalid_argument"


async def test_a_get_message_that_breaks_a_rule_names_the_field(client: httpx.AsyncClient, world: World) -> None:
    bad = vault_pb2.GetItemRequest(vault_id="acme-shared", item_id="not an id")

    response = await client.get(GET_ITEM, params=query(bad), headers=bearer(world.token("bob")))

    assert response.status_code == 400
    violations = detail(error_of(response), "google.rpc.BadRequest")["fieldViolations"]
    assert [v["field"] for v in violations] == ["itemId"]


async def test_a_query_over_the_body_limit_is_resource_exhausted(platform: Platform, world: World) -> None:
    app = create_app(Settings(max_body_bytes=512), platform=platform)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
        long = vault_pb2.ListItemsRequest(vault_id="acme-shared", page_token="x" * 600)
        refused = await client.get(LIST_ITEMS, params=query(long), headers=bearer(world.token("bob")))
        fits = await client.get(GET_ITEM, params=query(READ), headers=bearer(world.token("bob")))

    assert refused.status_code == 429
    assert error_of(refused)["code"] == "resource_exhausted"
    assert fits.status_code == 200, fits.text


async def test_a_token_in_a_get_message_is_refused_and_revoked(client: httpx.AsyncClient, world: World) -> None:
    leaked = world.token("bob")
    assert tokens.find_in(leaked) == [leaked]
    carrying = vault_pb2.GetItemRequest(vault_id="acme-shared", item_id=leaked)

    refused = await client.get(GET_ITEM, params=query(carrying), headers=bearer(world.token("alice")))
    after = await client.get(GET_ITEM, params=query(READ), headers=bearer(leaked))

    assert refused.status_code == 400
    error = error_of(refused)
    assert error["code"] == "invalid_argument"
    assert leaked not in refused.text
    assert [v["field"] for v in detail(error, "google.rpc.BadRequest")["fieldViolations"]] == ["message"]
    assert after.status_code == 401


async def test_access_token_in_a_get_query_is_refused(client: httpx.AsyncClient, world: World) -> None:
    response = await client.get(
        GET_ITEM, params=query(READ, access_token="anything"), headers=bearer(world.token("bob"))
    )

    assert response.status_code == 400
    assert error_of(response)["code"] == "invalid_argument"
    assert "access_token" in json.dumps(detail(error_of(response), "google.rpc.BadRequest"))


async def test_binary_get_with_bad_base64_is_invalid_argument(client: httpx.AsyncClient, world: World) -> None:
    params = query(READ, PROTO)
    params["message"] = "____"  # 0xff bytes: no protobuf message

    response = await client.get(GET_ITEM, params=params, headers=bearer(world.token("bob")))

    assert response.status_code == 400
    assert error_of(response)["code"] == "invalid_argument"
