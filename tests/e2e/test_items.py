"""CreateItem, UpdateItem, GetItem and ListItems against a real `zkplatform serve`:
Connect JSON and binary (POST and the GET form) and gRPC-Web with the Python
Connect client, gRPC with grpcio (test_items_durable.py: on SQLite and PostgreSQL)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import grpc
import httpx
import pytest
from connectrpc.client import ResponseMetadata
from connectrpc.code import Code
from connectrpc.compat import google_protobuf_binary_codec, google_protobuf_json_codec
from connectrpc.errors import ConnectError
from connectrpc.protocol import ProtocolType
from google.rpc import error_details_pb2, status_pb2

from tests.e2e.server import Server, serving
from zkplatform_api.platform.v1 import vault_pb2, vault_pb2_grpc
from zkplatform_api.platform.v1.vault_connect import VaultServiceClient

VAULT = "acme-shared"
CLIENTS = {
    "connect-json": (ProtocolType.CONNECT, google_protobuf_json_codec()),
    "connect-binary": (ProtocolType.CONNECT, google_protobuf_binary_codec()),
    "grpc-web": (ProtocolType.GRPC_WEB, google_protobuf_binary_codec()),
}


@pytest.fixture(scope="module")
def dev_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with serving(tmp_path_factory.mktemp("items"), "--dev") as server:
        yield server


@pytest.fixture(scope="module")
def tokens(dev_server: Server) -> dict[str, str]:
    credentials = json.loads((dev_server.log_path.parent / "var" / "dev-credentials.json").read_text())
    return {p["principalId"]: p["token"] for t in credentials["tenants"] for p in t["principals"]}


def content(item_id: str, note: str) -> dict[str, Any]:
    return {
        "vault_id": VAULT,
        "item_id": item_id,
        "kind": "login",
        "title_hash": f"th-{note}",
        "encrypted_payload": vault_pb2.EncryptedPayload(alg="A256GCM", nonce="bm9uY2U", ciphertext=f"c-{note}"),
        "wrapped_keys": [vault_pb2.WrappedKey(recipient_id="bob", wrap_alg="A256KW", wrapped_key="a2V5")],
    }


def error_info(error: ConnectError) -> error_details_pb2.ErrorInfo:
    (detail,) = [d for d in error.details if d.type_name == "google.rpc.ErrorInfo"]
    return error_details_pb2.ErrorInfo.FromString(detail.message_bytes)


async def connect_client_round(base_url: str, protocol: str, token: str) -> None:
    """Every RPC, a repeat, a conflict and a full listing with one Connect client."""
    kind, codec = CLIENTS[protocol]
    auth = {"Authorization": f"Bearer {token}"}
    item_id = f"e2e-{protocol}"
    async with VaultServiceClient(base_url, protocol=kind, codec=codec) as vault:
        with ResponseMetadata() as created_meta:
            created = await vault.create_item(vault_pb2.CreateItemRequest(**content(item_id, "1")), headers=auth)
        repeated = await vault.create_item(vault_pb2.CreateItemRequest(**content(item_id, "1")), headers=auth)
        with pytest.raises(ConnectError) as exists:
            await vault.create_item(vault_pb2.CreateItemRequest(**content(item_id, "other")), headers=auth)
        updated = await vault.update_item(
            vault_pb2.UpdateItemRequest(**content(item_id, "2"), base_version=1), headers=auth
        )
        with pytest.raises(ConnectError) as stale:
            await vault.update_item(vault_pb2.UpdateItemRequest(**content(item_id, "3"), base_version=1), headers=auth)
        with ResponseMetadata() as got_meta:
            got = await vault.get_item(vault_pb2.GetItemRequest(vault_id=VAULT, item_id=item_id), headers=auth)
        listed = await list_all(vault, auth, use_get=False)

    assert created.item.version == 1
    assert created.cursor.vault_id == VAULT
    assert repeated == created
    assert exists.value.code == Code.ALREADY_EXISTS
    assert error_info(exists.value).reason == "ITEM_EXISTS"
    assert dict(error_info(exists.value).metadata) == {"currentVersion": "1"}
    assert updated.item.version == 2
    assert updated.cursor.sequence == created.cursor.sequence + 1
    assert stale.value.code == Code.ABORTED
    assert dict(error_info(stale.value).metadata) == {"currentVersion": "2"}
    assert got.item == updated.item
    assert item_id in [i.item_id for i in listed]
    for meta in (created_meta, got_meta):
        assert meta.headers.get("cache-control") == "no-store"


async def list_all(vault: VaultServiceClient, auth: dict[str, str], *, use_get: bool) -> list[vault_pb2.Item]:
    items: list[vault_pb2.Item] = []
    page_token = ""
    cursors = set()
    for _ in range(100):
        page = await vault.list_items(
            vault_pb2.ListItemsRequest(vault_id=VAULT, page_size=2, page_token=page_token),
            headers=auth,
            use_get=use_get,
        )
        items += page.items
        cursors.add(page.cursor.sequence)
        if not (page_token := page.next_page_token):
            break
    assert len(cursors) == 1
    assert [i.item_id for i in items] == sorted(i.item_id for i in items)
    return items


@pytest.mark.parametrize("protocol", list(CLIENTS))
def test_every_rpc_with_the_connect_client(dev_server: Server, tokens: dict[str, str], protocol: str) -> None:
    asyncio.run(connect_client_round(dev_server.base_url, protocol, tokens["bob"]))


@pytest.mark.parametrize("codec", ["json", "proto"])
def test_the_get_form_with_the_connect_client(dev_server: Server, tokens: dict[str, str], codec: str) -> None:
    async def read() -> tuple[vault_pb2.GetItemResponse, ResponseMetadata, list[vault_pb2.Item]]:
        chosen = google_protobuf_json_codec() if codec == "json" else google_protobuf_binary_codec()
        auth = {"Authorization": f"Bearer {tokens['alice']}"}
        async with VaultServiceClient(dev_server.base_url, codec=chosen) as vault:
            with ResponseMetadata() as meta:
                got = await vault.get_item(
                    vault_pb2.GetItemRequest(vault_id="acme-private", item_id="item-1"), headers=auth, use_get=True
                )
            return got, meta, await list_all(vault, auth, use_get=True)

    got, meta, listed = asyncio.run(read())

    assert (got.item.item_id, got.item.vault_id) == ("item-1", "acme-private")
    assert meta.headers.get("cache-control") == "no-store"
    assert len(listed) >= 6


def test_the_get_form_with_plain_http(dev_server: Server, tokens: dict[str, str]) -> None:
    """What a browser or curl sends: the JSON message URL-encoded in the query."""
    message = json.dumps({"vaultId": "acme-private", "itemId": "item-2"})
    url = f"{dev_server.base_url}/platform.v1.VaultService/GetItem"
    params = {"connect": "v1", "encoding": "json", "message": message}

    response = httpx.get(url, params=params, headers={"Authorization": f"Bearer {tokens['alice']}"}, timeout=30)
    refused = httpx.put(url, params=params, timeout=30)

    assert response.status_code == 200, response.text
    assert response.json()["item"]["itemId"] == "item-2"
    assert response.headers["cache-control"] == "no-store"
    assert (refused.status_code, refused.headers["allow"]) == (405, "GET, POST")


def test_every_rpc_over_grpc(dev_server: Server, tokens: dict[str, str]) -> None:
    auth = [("authorization", f"Bearer {tokens['bob']}")]
    with grpc.insecure_channel(dev_server.base_url.removeprefix("http://")) as channel:
        stub = vault_pb2_grpc.VaultServiceStub(channel)  # type: ignore[no-untyped-call] # grpcio stubs are untyped
        created, call = stub.CreateItem.with_call(
            vault_pb2.CreateItemRequest(**content("e2e-grpc", "1")), metadata=auth, timeout=10
        )
        repeated = stub.CreateItem(vault_pb2.CreateItemRequest(**content("e2e-grpc", "1")), metadata=auth, timeout=10)
        updated = stub.UpdateItem(
            vault_pb2.UpdateItemRequest(**content("e2e-grpc", "2"), base_version=1), metadata=auth, timeout=10
        )
        got = stub.GetItem(vault_pb2.GetItemRequest(vault_id=VAULT, item_id="e2e-grpc"), metadata=auth, timeout=10)
        listed = stub.ListItems(vault_pb2.ListItemsRequest(vault_id=VAULT, page_size=1000), metadata=auth, timeout=10)
        with pytest.raises(grpc.RpcError) as exists:
            stub.CreateItem(vault_pb2.CreateItemRequest(**content("e2e-grpc", "x")), metadata=auth, timeout=10)

    assert created.item.version == 1
    assert repeated == created
    assert ("cache-control", "no-store") in call.initial_metadata()
    assert updated.item.version == 2
    assert got.item == updated.item
    assert "e2e-grpc" in [i.item_id for i in listed.items]
    assert listed.next_page_token == ""
    failure: Any = exists.value
    assert failure.code() == grpc.StatusCode.ALREADY_EXISTS
    (status_bin,) = [v for k, v in failure.trailing_metadata() if k == "grpc-status-details-bin"]
    info = error_details_pb2.ErrorInfo()
    status_pb2.Status.FromString(status_bin).details[0].Unpack(info)
    assert (info.reason, dict(info.metadata)) == ("ITEM_EXISTS", {"currentVersion": "2"})
