"""The HTTP edge of a real server, probed the way the Connect conformance suite probes one."""

from __future__ import annotations

import asyncio
import gzip
import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from tests.actors import OPERATOR
from tests.connect import JSON, PROTO, VAULT_DELETE, Codec, error_of, headers
from tests.contract.test_store_contract import item
from tests.e2e.server import Server, serving
from tests.e2e.test_durable import ENV, seeded
from tests.world import World
from zkplatform.domain.models import Item, Vault
from zkplatform.store import open_store


@pytest.fixture(scope="module")
def world_and_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[World, Server]]:
    tmp_path = tmp_path_factory.mktemp("edge")
    url = f"sqlite:///{tmp_path}/zk.db"
    world = seeded(url)
    with serving(tmp_path, "--store", url, env=ENV) as server:
        yield world, server


@pytest.fixture
def server(world_and_server: tuple[World, Server]) -> Server:
    return world_and_server[1]


@pytest.fixture
def alice(world_and_server: tuple[World, Server]) -> str:
    return world_and_server[0].token("alice")


def post(server: Server, path: str, content: bytes, request_headers: dict[str, str]) -> httpx.Response:
    return httpx.post(server.base_url + path, content=content, headers=request_headers, timeout=30)


BODY = json.dumps({"vaultId": "acme-shared", "itemId": "item-6", "baseVersion": 1}).encode()


@pytest.mark.parametrize("path", ["/platform.v1.NoSuchService/DeleteItem", "/platform.v1.VaultService/NoSuchMethod"])
def test_unknown_service_or_method_is_404_unimplemented(server: Server, alice: str, path: str) -> None:
    response = post(server, path, BODY, headers(JSON, alice))

    assert response.status_code == 404
    assert error_of(response)["code"] == "unimplemented"


def test_other_verbs_are_405(server: Server, alice: str) -> None:
    for method in ("GET", "PUT", "PATCH"):
        response = httpx.request(method, server.base_url + VAULT_DELETE, headers=headers(JSON, alice), timeout=30)
        assert response.status_code == 405


def test_unsupported_content_type_is_415(server: Server, alice: str) -> None:
    response = post(server, VAULT_DELETE, BODY, headers(JSON, alice, **{"Content-Type": "text/xml"}))

    assert response.status_code == 415


@pytest.mark.parametrize(("codec", "content"), [(JSON, b'{"vaultId": '), (PROTO, b"\x0a\xff\xff")])
def test_malformed_bodies_are_invalid_argument(server: Server, alice: str, codec: Codec, content: bytes) -> None:
    response = post(server, VAULT_DELETE, content, headers(codec, alice))

    assert response.status_code == 400
    assert error_of(response)["code"] == "invalid_argument"


def test_unknown_json_fields_are_ignored(server: Server, alice: str) -> None:
    body = json.dumps({"vaultId": "acme-private", "itemId": "item-5", "baseVersion": 1, "fromTheFuture": {"x": 1}})

    response = post(server, VAULT_DELETE, body.encode(), headers(JSON, alice))

    assert response.status_code == 200, response.text


def test_oversized_body_is_resource_exhausted(server: Server, alice: str) -> None:
    response = post(server, VAULT_DELETE, b"{" + b" " * (64 * 1024) + b"}", headers(JSON, alice))

    assert response.status_code == 429
    assert error_of(response)["code"] == "resource_exhausted"


def test_gzip_request_body(server: Server, alice: str) -> None:
    body = json.dumps({"vaultId": "acme-private", "itemId": "item-4", "baseVersion": 1}).encode()

    response = post(server, VAULT_DELETE, gzip.compress(body), headers(JSON, alice, **{"Content-Encoding": "gzip"}))

    assert response.status_code == 200, response.text
    assert response.json()["item"]["deleted"] is True


@pytest.mark.parametrize("timeout", ["soon", "-5", "12345678901", "1.5"])
def test_malformed_timeout_header_is_invalid_argument(server: Server, alice: str, timeout: str) -> None:
    response = post(server, VAULT_DELETE, BODY, headers(JSON, alice, **{"Connect-Timeout-Ms": timeout}))

    assert response.status_code == 400
    assert error_of(response)["code"] == "invalid_argument"


DEADLINE_ITEMS = [f"d-{n}" for n in range(1, 6)]


def test_expired_deadline_is_deadline_exceeded_and_nothing_is_half_applied(tmp_path: Path) -> None:
    """A connection of the test holds the SQLite file's write lock, so no delete can finish
    within its deadline however fast the machine (the deadline only has to be shorter than
    the store's busy timeout). The server's transaction still waits for the lock after the
    answer: released, a delete may be applied, but only whole and only once."""
    database = tmp_path / "zk.db"
    url = f"sqlite:///{database}"
    alice = seeded(url).token("alice")
    asyncio.run(_deadline_vault(url))
    with serving(tmp_path, "--store", url, env=ENV) as server:
        with _write_lock(database):
            answers = asyncio.run(_deletes_with_a_deadline(server.base_url, alice, DEADLINE_ITEMS, timeout_ms=200))
            items_then, sequence_then = asyncio.run(_deadline_vault_state(url))
        # The caller cannot tell whether a delete that timed out was applied: it repeats it.
        repeats = [
            post(server, VAULT_DELETE, _delete_body(item_id, 1), headers(JSON, alice)) for item_id in DEADLINE_ITEMS
        ]
    items_after, sequence_after = asyncio.run(_deadline_vault_state(url))

    assert answers == ["deadline_exceeded"] * len(DEADLINE_ITEMS)
    assert [(item.deleted, item.version) for item in items_then.values()] == [(False, 1)] * len(DEADLINE_ITEMS)
    for item_id, repeat in zip(DEADLINE_ITEMS, repeats, strict=True):
        assert repeat.status_code == 200, repeat.text
        stored = items_after[item_id]
        assert stored == items_then[item_id].tombstone(stored.updated_at)  # a whole tombstone, one version up
        assert repeat.json()["item"]["version"] == "2"
    assert sequence_after == sequence_then + len(DEADLINE_ITEMS)  # one change per item: none lost, none twice


@contextmanager
def _write_lock(database: Path) -> Iterator[None]:
    """Hold the SQLite file's write lock (as another writer would) until the block ends."""
    connection = sqlite3.connect(database, isolation_level=None)
    try:
        connection.execute("BEGIN IMMEDIATE")
        yield
        connection.execute("ROLLBACK")
    finally:
        connection.close()


def _delete_body(item_id: str, version: int) -> bytes:
    return json.dumps({"vaultId": "deadline", "itemId": item_id, "baseVersion": version}).encode()


async def _deletes_with_a_deadline(base_url: str, token: str, item_ids: list[str], timeout_ms: int) -> list[str]:
    """Delete the items concurrently, each with that deadline: the code of each answer."""
    async with httpx.AsyncClient(base_url=base_url, timeout=30) as client:

        async def one(item_id: str) -> str:
            response = await client.post(
                VAULT_DELETE,
                content=_delete_body(item_id, 1),
                headers=headers(JSON, token, **{"Connect-Timeout-Ms": str(timeout_ms)}),
            )
            return "ok" if response.status_code == 200 else str(error_of(response)["code"])

        return list(await asyncio.gather(*(one(item_id) for item_id in item_ids)))


async def _deadline_vault_state(url: str) -> tuple[dict[str, Item], int]:
    """The deadline vault's items, read straight from the store, and its sequence number."""
    store = await open_store(url)
    try:
        found = {item_id: await store.get_item("deadline", item_id) for item_id in DEADLINE_ITEMS}
        sequence = await store.vault_sequence("deadline")
    finally:
        await store.close()
    return {item_id: item for item_id, item in found.items() if item is not None}, sequence


async def _deadline_vault(url: str) -> None:
    """A vault for the deadline test, added through the store as an operator would."""
    store = await open_store(url)
    try:
        await store.add_vault(Vault("deadline", "acme", frozenset({"alice"})), OPERATOR)
        await store.add_items(
            [item(item_id, vault_id="deadline", tenant_id="acme") for item_id in DEADLINE_ITEMS], OPERATOR
        )
    finally:
        await store.close()
