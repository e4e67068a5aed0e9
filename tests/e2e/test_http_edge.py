"""The HTTP edge of a real server, probed the way the Connect conformance suite probes one."""

from __future__ import annotations

import asyncio
import gzip
import json
from collections.abc import Iterator

import httpx
import pytest

from tests.connect import JSON, PROTO, VAULT_DELETE, Codec, error_of, headers
from tests.contract.test_store_contract import item
from tests.e2e.server import Server, serving
from tests.e2e.test_durable import ENV, seeded
from tests.world import World
from zkplatform.domain.models import Vault
from zkplatform.store import open_store


@pytest.fixture(scope="module")
def world_and_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[World, Server]]:
    tmp_path = tmp_path_factory.mktemp("edge")
    url = f"sqlite:///{tmp_path}/zk.db"
    world = seeded(url)
    asyncio.run(_deadline_vault(url))
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


def test_expired_deadline_is_deadline_exceeded_and_nothing_is_half_applied(
    world_and_server: tuple[World, Server], alice: str
) -> None:
    _, server = world_and_server
    outcomes = asyncio.run(_racing_deadlines(server.base_url, alice))

    assert "deadline_exceeded" in {code for code, _ in outcomes}
    # Whatever each call answered, every item is either untouched or a whole tombstone.
    after = [post(server, VAULT_DELETE, _delete_body(n, 1), headers(JSON, alice)) for n in range(1, 31)]
    for response in after:
        assert response.status_code == 200, response.text
        item = response.json()["item"]
        assert item["deleted"] is True
        assert item["version"] == "2"
        assert "encryptedPayload" not in item
    sequences = [int(r.json()["cursor"]["sequence"]) for r in after]
    assert len(set(sequences)) == len(sequences)


def _delete_body(number: int, version: int) -> bytes:
    return json.dumps({"vaultId": "deadline", "itemId": f"d-{number}", "baseVersion": version}).encode()


async def _racing_deadlines(base_url: str, token: str) -> list[tuple[str, int]]:
    async with httpx.AsyncClient(base_url=base_url, timeout=30) as client:

        async def one(number: int) -> tuple[str, int]:
            response = await client.post(
                VAULT_DELETE,
                content=_delete_body(number, 1),
                headers=headers(JSON, token, **{"Connect-Timeout-Ms": "1"}),
            )
            code = "ok" if response.status_code == 200 else error_of(response)["code"]
            return code, number

        return list(await asyncio.gather(*(one(n) for n in range(1, 31))))


async def _deadline_vault(url: str) -> None:
    """A vault of 30 items for the deadline test, added through the store as an operator would."""
    store = await open_store(url)
    try:
        await store.add_vault(Vault("deadline", "acme", frozenset({"alice"})))
        await store.add_items([item(f"d-{n}", vault_id="deadline", tenant_id="acme") for n in range(1, 31)])
    finally:
        await store.close()
