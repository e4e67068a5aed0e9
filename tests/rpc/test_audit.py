"""The audit trail of the API's changes, through the whole app in-process: who, with which
token, in which request; nothing for what was refused; never a secret."""

from __future__ import annotations

import json
from typing import Any

import httpx

from tests.connect import BROKER_MINT, JSON, VAULT_DELETE, headers
from tests.world import PEPPER, World
from zkplatform.domain import tokens
from zkplatform_api.platform.v1 import broker_pb2

CREATE = "/platform.v1.VaultService/CreateItem"
UPDATE = "/platform.v1.VaultService/UpdateItem"
REVOKE = "/platform.v1.BrokerService/RevokeToken"
PAYLOAD = {"alg": "A256GCM", "nonce": "bm9uY2Vub25jZTEy", "aad": "YWFkLWF1ZGl0", "ciphertext": "c2VjcmV0LWF1ZGl0"}
KEYS = [{"recipientId": "alice", "wrapAlg": "ECDH-ES+A256KW", "wrappedKey": "d3JhcHBlZC1hdWRpdA"}]


async def post(client: httpx.AsyncClient, path: str, body: dict[str, Any], token: str, request_id: str) -> Any:
    response = await client.post(path, json=body, headers=headers(JSON, token, **{"X-Request-Id": request_id}))
    assert response.status_code == 200, response.text
    return response.json()


async def events(world: World) -> list[dict[str, Any]]:
    store = world.platform.store
    return [record.exported() for record in await store.audit_records("acme", 0, 10_000)]


async def token_id(world: World, principal_id: str) -> str:
    found = await world.platform.store.find_token(tokens.TokenHasher(PEPPER)(world.token(principal_id)))
    assert found is not None
    return found.token_id


async def test_each_change_names_its_principal_token_and_request(client: httpx.AsyncClient, world: World) -> None:
    alice = world.token("alice")
    before = len(await events(world))
    item = {"vaultId": "acme-private", "itemId": "audited", "kind": "note", "titleHash": "dGl0bGUtYXVkaXQ"}
    await post(client, CREATE, {**item, "encryptedPayload": PAYLOAD, "wrappedKeys": KEYS}, alice, "req-create")
    await post(
        client, UPDATE, {**item, "baseVersion": "1", "encryptedPayload": PAYLOAD, "wrappedKeys": KEYS}, alice, "req-up"
    )
    await post(client, VAULT_DELETE, {"vaultId": "acme-private", "itemId": "audited", "baseVersion": "2"}, alice, "r-d")
    body = {"tenantId": "acme", "requestedScopes": ["vault.items.read"]}
    minted = (await post(client, BROKER_MINT, body, alice, "req-mint"))["token"]
    await post(client, REVOKE, {"tokenId": minted["tokenId"]}, alice, "req-revoke")

    alice_id = await token_id(world, "alice")
    by_alice = {"kind": "principal", "principal": "alice", "token": alice_id}
    assert [(e["action"], e["target"], e["actor"], e["requestId"]) for e in (await events(world))[before:]] == [
        ("item.created", {"vault": "acme-private", "item": "audited"}, by_alice, "req-create"),
        ("item.updated", {"vault": "acme-private", "item": "audited"}, by_alice, "req-up"),
        ("item.deleted", {"vault": "acme-private", "item": "audited"}, by_alice, "r-d"),
        ("token.minted", {"token": minted["tokenId"]}, by_alice, "req-mint"),
        ("token.revoked", {"token": minted["tokenId"], "root": minted["tokenId"]}, by_alice, "req-revoke"),
    ]


async def test_a_token_seen_in_a_url_is_revoked_by_the_service_in_that_request(
    client: httpx.AsyncClient, world: World
) -> None:
    bob = world.token("bob")
    await client.post(
        f"{VAULT_DELETE}?access_token={bob}", json={}, headers={**headers(JSON), "X-Request-Id": "leak-1"}
    )

    (event,) = (await events(world))[-1:]
    assert (event["action"], event["actor"], event["requestId"]) == (
        "token.revoked_in_url",
        {"kind": "service"},
        "leak-1",
    )
    assert event["target"]["token"] == event["target"]["root"] == await token_id(world, "bob")


async def test_refused_calls_leave_no_event(client: httpx.AsyncClient, world: World) -> None:
    before = await events(world)
    body = {"vaultId": "acme-private", "itemId": "item-1", "baseVersion": "1"}
    for token in ("zkp_" + "x" * 43, world.token("bob")):  # unknown; not a member of the vault
        response = await client.post(VAULT_DELETE, json=body, headers=headers(JSON, token))
        assert response.status_code in (401, 403)
    stale = await client.post(
        VAULT_DELETE, json={**body, "baseVersion": "9"}, headers=headers(JSON, world.token("alice"))
    )
    assert stale.status_code == 409

    assert await events(world) == before


async def test_no_event_holds_a_secret_or_a_payload(client: httpx.AsyncClient, world: World) -> None:
    alice = world.token("alice")
    item = {"vaultId": "acme-private", "itemId": "secretive", "kind": "note", "titleHash": "dGl0bGUtYXVkaXQ"}
    await post(client, CREATE, {**item, "encryptedPayload": PAYLOAD, "wrappedKeys": KEYS}, alice, "r1")
    body = {"tenantId": "acme", "requestedScopes": ["vault.items.read"]}
    minted = JSON.decode(
        (await client.post(BROKER_MINT, json=body, headers=headers(JSON, alice))).content,
        broker_pb2.MintUserApiTokenResponse,
    ).token

    trail = json.dumps(await events(world))
    secrets = [world.token("alice"), world.token("bob"), minted.access_token, item["titleHash"]]
    secrets += [PAYLOAD["nonce"], PAYLOAD["aad"], PAYLOAD["ciphertext"], KEYS[0]["wrappedKey"]]
    assert [s for s in secrets if s in trail] == []
