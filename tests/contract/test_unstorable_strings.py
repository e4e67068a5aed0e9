"""Strings a store cannot hold (U+0000 on PostgreSQL) are refused before any store sees
them, by the contract's one rule, with the same answer on every store."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from tests.connect import BROKER_MINT, JSON, VAULT_DELETE, error_of, headers
from tests.dpop import make_proof, new_key, thumbprint
from tests.world import BASE_URL, PEPPER, FakeClock, World, serve_in_process
from zkplatform.store import MigratableStore
from zkplatform.wiring import Platform

VAULT = "/platform.v1.VaultService"
BROKER = "/platform.v1.BrokerService"
PAYLOAD = {"alg": "A256GCM", "nonce": "bm9uY2U", "ciphertext": "Y2lwaGVy"}
KEYS = [{"recipientId": "alice", "wrapAlg": "A256KW", "wrappedKey": "a2V5"}]


@pytest.fixture
async def world(store: MigratableStore, clock: FakeClock) -> World:
    return await World.seed(Platform.build(store, PEPPER, clock))


@pytest.fixture
async def client(world: World) -> AsyncIterator[httpx.AsyncClient]:
    async with await serve_in_process(world.platform) as client:
        yield client


async def created(client: httpx.AsyncClient, world: World, item_id: str, title_hash: str) -> httpx.Response:
    body: dict[str, object] = {"vaultId": "acme-private", "itemId": item_id, "kind": "note", "titleHash": title_hash}
    body |= {"encryptedPayload": PAYLOAD, "wrappedKeys": KEYS}
    return await client.post(f"{VAULT}/CreateItem", json=body, headers=headers(JSON, world.token("alice")))


NUL_RULE = "must not contain U+0000 (NUL)"  # the free-form strings' rule
BASE64URL_RULE = "does not match regex pattern `^[A-Za-z0-9_-]*$`"  # title hashes: base64url, which has no NUL


def refused_naming(response: httpx.Response, field: str, description: str = NUL_RULE) -> None:
    assert response.status_code == 400, response.text
    error = error_of(response)
    assert error["code"] == "invalid_argument"
    [bad_request] = [d["debug"] for d in error["details"] if d["type"] == "google.rpc.BadRequest"]
    assert bad_request["fieldViolations"] == [{"field": field, "description": description}]


async def test_a_create_with_nul_in_the_title_hash_is_refused(client: httpx.AsyncClient, world: World) -> None:
    refused_naming(await created(client, world, "nul-1", "th\x00"), "titleHash", BASE64URL_RULE)

    assert await world.platform.store.get_item("acme-private", "nul-1") is None


async def test_an_update_with_nul_in_the_title_hash_is_refused(client: httpx.AsyncClient, world: World) -> None:
    assert (await created(client, world, "nul-2", "th")).status_code == 200
    body = {"vaultId": "acme-private", "itemId": "nul-2", "kind": "note", "titleHash": "\x00", "baseVersion": 1}
    body |= {"encryptedPayload": PAYLOAD, "wrappedKeys": KEYS}

    response = await client.post(f"{VAULT}/UpdateItem", json=body, headers=headers(JSON, world.token("alice")))

    refused_naming(response, "titleHash", BASE64URL_RULE)
    assert (await world.item("acme-private", "nul-2")).version == 1


@pytest.mark.parametrize(
    ("path", "body"),
    [(f"{VAULT}/ListItems", {"vaultId": "acme-private"}), (f"{BROKER}/ListTokens", {})],
)
async def test_a_page_token_with_nul_is_refused(
    client: httpx.AsyncClient, world: World, path: str, body: dict[str, str]
) -> None:
    response = await client.post(path, json=body | {"pageToken": "a\x00b"}, headers=headers(JSON, world.token("alice")))

    refused_naming(response, "pageToken")


@pytest.mark.parametrize("jti", ["a\x00b", "a\ud800b"], ids=["nul", "unpaired-surrogate"])
async def test_a_dpop_proof_whose_jti_no_store_can_hold_is_invalid(
    client: httpx.AsyncClient, world: World, clock: FakeClock, jti: str
) -> None:
    key = new_key("ec")
    alice = world.token("alice")
    mint = {"tenantId": "acme", "requestedScopes": ["vault.items.delete"], "popKeyId": thumbprint(key)}
    proof = make_proof(key, BASE_URL + BROKER_MINT, alice, iat=clock.now)
    minted = await client.post(BROKER_MINT, json=mint, headers=headers(JSON, alice, DPoP=proof))
    assert minted.status_code == 200, minted.text
    bound = minted.json()["token"]["accessToken"]
    proof = make_proof(key, BASE_URL + VAULT_DELETE, bound, iat=clock.now, jti=jti)

    response = await client.post(
        VAULT_DELETE,
        json={"vaultId": "acme-private", "itemId": "none", "baseVersion": 1},
        headers=headers(JSON, Authorization=f"DPoP {bound}", DPoP=proof),
    )

    assert response.status_code == 401, response.text
    assert error_of(response)["message"] == "DPoP proof: jti must not contain U+0000 (NUL) or an unpaired surrogate"
