"""CreateItem, UpdateItem, GetItem and ListItems on the durable stores under a real
`zkplatform serve`: every protocol's round, and what it stored survives a restart."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest

from tests.e2e.server import serving
from tests.e2e.test_durable import ENV, seeded
from tests.e2e.test_items import CLIENTS, VAULT, connect_client_round
from tests.world import World


@pytest.mark.parametrize("store", ["sqlite", "postgresql"])
def test_every_rpc_on_a_durable_store(tmp_path: Path, request: pytest.FixtureRequest, store: str) -> None:
    """The same rounds on SQLite and PostgreSQL, and what they stored survives a restart."""
    url = f"sqlite:///{tmp_path}/zk.db" if store == "sqlite" else str(request.getfixturevalue("postgres_url"))
    world: World = seeded(url)
    bob = world.token("bob")
    with serving(tmp_path, "--store", url, env=ENV) as server:
        for protocol in CLIENTS:
            asyncio.run(connect_client_round(server.base_url, protocol, bob))
        raced = asyncio.run(race_updates(server.base_url, bob))
    with serving(tmp_path, "--store", url, env=ENV) as server:
        answer = httpx.post(
            f"{server.base_url}/platform.v1.VaultService/ListItems",
            json={"vaultId": VAULT, "pageSize": 1000},
            headers={"Connect-Protocol-Version": "1", "Authorization": f"Bearer {bob}"},
            timeout=30,
        ).json()

    versions = {i["itemId"]: i["version"] for i in answer["items"]}
    assert {versions[f"e2e-{p}"] for p in CLIENTS} == {"2"}
    assert sorted(raced) == [200] + [409] * 9
    assert versions["item-6"] == "2"


async def race_updates(base_url: str, token: str) -> list[int]:
    """Ten updates of one item at one base version, each with its own content, at once."""
    async with httpx.AsyncClient(base_url=base_url, timeout=30) as client:
        responses = await asyncio.gather(
            *(
                client.post(
                    "/platform.v1.VaultService/UpdateItem",
                    json={
                        "vaultId": VAULT,
                        "itemId": "item-6",
                        "baseVersion": "1",
                        "kind": "login",
                        "titleHash": f"writer-{n}",
                        "encryptedPayload": {"alg": "A256GCM", "nonce": "bm9uY2U", "ciphertext": "Yw"},
                        "wrappedKeys": [{"recipientId": "bob", "wrapAlg": "A256KW", "wrappedKey": "aw"}],
                    },
                    headers={"Connect-Protocol-Version": "1", "Authorization": f"Bearer {token}"},
                )
                for n in range(10)
            )
        )
    return [r.status_code for r in responses]
