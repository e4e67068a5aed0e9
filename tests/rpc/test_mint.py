"""BrokerService.MintUserApiToken through the whole app in-process."""

from __future__ import annotations

import logging
from typing import Any

import httpx
import pytest

from tests.connect import BROKER_MINT, JSON, VAULT_DELETE, Codec, detail, error_of, headers
from tests.world import PEPPER, FakeClock, World, serve_in_process
from zkplatform.domain import tokens
from zkplatform.domain.broker import MintPolicy
from zkplatform.domain.models import Scope
from zkplatform.store.memory import MemoryStore
from zkplatform.wiring import Platform
from zkplatform_api.platform.v1 import broker_pb2

READ, WRITE, DELETE, MINT, MANAGE, *_ = (s.value for s in Scope)  # then the directory scopes


def mint(
    tenant_id: str = "acme", scopes: tuple[str, ...] = (READ,), ttl: int = 0, pop_key_id: str = ""
) -> broker_pb2.MintUserApiTokenRequest:
    return broker_pb2.MintUserApiTokenRequest(
        tenant_id=tenant_id, requested_scopes=list(scopes), requested_ttl_seconds=ttl, pop_key_id=pop_key_id
    )


async def call(
    client: httpx.AsyncClient,
    codec: Codec,
    request: broker_pb2.MintUserApiTokenRequest,
    token: str | None,
    **extra: str,
) -> httpx.Response:
    return await client.post(BROKER_MINT, content=codec.encode(request), headers=headers(codec, token, **extra))


async def minted(
    client: httpx.AsyncClient, request: broker_pb2.MintUserApiTokenRequest, token: str
) -> broker_pb2.Token:
    response = await call(client, JSON, request, token)
    assert response.status_code == 200, response.text
    return JSON.decode(response.content, broker_pb2.MintUserApiTokenResponse).token


async def delete_status(client: httpx.AsyncClient, token: str, vault_id: str, item_id: str) -> int:
    body = {"vaultId": vault_id, "itemId": item_id, "baseVersion": 1}
    return (await client.post(VAULT_DELETE, json=body, headers=headers(JSON, token))).status_code


# the token


async def test_mint_answers_a_least_privilege_token(
    client: httpx.AsyncClient, codec: Codec, world: World, clock: FakeClock
) -> None:
    response = await call(client, codec, mint(scopes=(DELETE, READ, DELETE), ttl=600), world.token("alice"))

    assert response.status_code == 200, response.text
    token = codec.decode(response.content, broker_pb2.MintUserApiTokenResponse).token
    assert tokens.is_well_formed(token.access_token)
    assert token.access_token.startswith("zkp_")
    assert token.token_id.startswith("tok_")
    assert token.access_token not in token.token_id
    assert (token.tenant_id, token.principal_id, token.role) == ("acme", "alice", broker_pb2.ROLE_OWNER)
    assert list(token.scopes) == [DELETE, READ]  # folded and sorted
    assert token.pop_key_id == ""
    assert token.issued_at.seconds == clock.now
    assert token.expires_at.seconds == clock.now + 600
    assert token.issued_at.nanos == token.expires_at.nanos == 0


async def test_json_token_has_the_contract_shape(client: httpx.AsyncClient, world: World) -> None:
    response = await client.post(
        BROKER_MINT,
        json={"tenantId": "acme", "requestedScopes": ["vault.items.read"], "requestedTtlSeconds": 120},
        headers=headers(JSON, world.token("alice")),
    )

    token = response.json()["token"]
    assert set(token) == {
        "accessToken",
        "tokenId",
        "tenantId",
        "principalId",
        "scopes",
        "role",
        "issuedAt",
        "expiresAt",
    }
    assert token["role"] == "ROLE_OWNER"
    assert token["issuedAt"] == "2027-01-15T08:00:00Z"
    assert token["expiresAt"] == "2027-01-15T08:02:00Z"


async def test_the_server_keeps_only_the_hmac(client: httpx.AsyncClient, world: World) -> None:
    token = await minted(client, mint(), world.token("alice"))

    record = await world.platform.store.find_token(tokens.TokenHasher(PEPPER)(token.access_token))

    assert record is not None
    assert record.token_id == token.token_id
    assert token.access_token not in repr(record)
    assert record.minted


async def test_minted_token_works_at_once_within_its_scopes(client: httpx.AsyncClient, world: World) -> None:
    deleter = await minted(client, mint(scopes=(DELETE,)), world.token("alice"))
    reader = await minted(client, mint(scopes=(READ,)), world.token("alice"))

    assert await delete_status(client, deleter.access_token, "acme-private", "item-1") == 200
    assert await delete_status(client, reader.access_token, "acme-private", "item-2") == 403
    assert await call(client, JSON, mint(), deleter.access_token) is not None
    assert error_of(await call(client, JSON, mint(), deleter.access_token))["code"] == "permission_denied"


# lifetimes


async def test_default_lifetime_is_900_seconds(client: httpx.AsyncClient, world: World, clock: FakeClock) -> None:
    token = await minted(client, mint(ttl=0), world.token("alice"))

    assert token.expires_at.seconds - clock.now == 900


@pytest.mark.parametrize("ttl", [60, 3600])
async def test_bounds_are_inclusive(client: httpx.AsyncClient, world: World, clock: FakeClock, ttl: int) -> None:
    token = await minted(client, mint(ttl=ttl), world.token("alice"))

    assert token.expires_at.seconds - clock.now == ttl


@pytest.mark.parametrize("ttl", [1, 59, 3601, 86400])
async def test_lifetime_outside_the_bounds_is_refused_with_the_bounds(
    client: httpx.AsyncClient, world: World, ttl: int
) -> None:
    response = await call(client, JSON, mint(ttl=ttl), world.token("alice"))

    assert response.status_code == 400
    (violation,) = detail(error_of(response), "google.rpc.BadRequest")["fieldViolations"]
    assert violation["field"] == "requestedTtlSeconds"
    assert "60" in violation["description"]
    assert "3600" in violation["description"]


async def test_lifetime_is_capped_at_the_parents_expiry(
    client: httpx.AsyncClient, world: World, clock: FakeClock
) -> None:
    parent_expiry = clock.now + 3600  # the dev tokens live one hour
    clock.advance(3000)

    token = await minted(client, mint(ttl=900), world.token("alice"))

    assert token.expires_at.seconds == parent_expiry


async def test_parent_expiring_sooner_than_the_minimum_is_a_failed_precondition(
    client: httpx.AsyncClient, world: World, clock: FakeClock
) -> None:
    clock.advance(3600 - 59)

    response = await call(client, JSON, mint(ttl=900), world.token("alice"))

    assert response.status_code == 400
    error = error_of(response)
    assert error["code"] == "failed_precondition"
    assert detail(error, "google.rpc.ErrorInfo")["reason"] == "PARENT_EXPIRES_SOON"


# escalation


async def test_token_without_the_mint_scope_is_denied(client: httpx.AsyncClient, world: World) -> None:
    response = await call(client, JSON, mint(scopes=(READ,)), world.token("bob"))  # a member holds no mint scope

    assert response.status_code == 403
    assert "broker.tokens.mint" in error_of(response)["message"]


async def test_a_child_cannot_ask_for_more_than_its_parent(client: httpx.AsyncClient, world: World) -> None:
    parent = await minted(client, mint(scopes=(MINT, READ)), world.token("alice"))

    response = await call(client, JSON, mint(scopes=(READ, DELETE, WRITE)), parent.access_token)

    assert response.status_code == 403
    error = error_of(response)
    assert error["code"] == "permission_denied"
    info = detail(error, "google.rpc.ErrorInfo")
    assert info["reason"] == "SCOPES_NOT_HELD"
    assert info["metadata"] == {"refusedScopes": "vault.items.delete,vault.items.write"}


async def test_another_tenant_is_denied(client: httpx.AsyncClient, world: World) -> None:
    response = await call(client, JSON, mint(tenant_id="globex"), world.token("alice"))

    assert response.status_code == 403
    assert error_of(response)["code"] == "permission_denied"


@pytest.mark.parametrize(
    ("fields", "bad"),
    [
        ({"tenant_id": "", "requested_scopes": [READ]}, "tenantId"),
        ({"tenant_id": "acme", "requested_scopes": []}, "requestedScopes"),
        ({"tenant_id": "acme", "requested_scopes": ["vault.items.purge"]}, "requestedScopes[0]"),
        ({"tenant_id": "acme", "requested_scopes": [READ] * 33}, "requestedScopes"),
        ({"tenant_id": "acme", "requested_scopes": [READ], "requested_ttl_seconds": -5}, "requestedTtlSeconds"),
        ({"tenant_id": "acme", "requested_scopes": [READ], "pop_key_id": "not-a-thumbprint"}, "popKeyId"),
    ],
)
async def test_malformed_requests_name_the_field(
    client: httpx.AsyncClient, codec: Codec, world: World, fields: dict[str, Any], bad: str
) -> None:
    response = await call(client, codec, broker_pb2.MintUserApiTokenRequest(**fields), world.token("alice"))

    assert response.status_code == 400
    violations = detail(error_of(response), "google.rpc.BadRequest")["fieldViolations"]
    assert bad in {v["field"] for v in violations}


async def test_unauthenticated_mint_is_refused(client: httpx.AsyncClient, codec: Codec) -> None:
    response = await call(client, codec, mint(), None)

    assert response.status_code == 401


async def test_token_in_the_query_of_a_mint_is_refused_and_revoked(client: httpx.AsyncClient, world: World) -> None:
    alice = world.token("alice")

    leaked = await client.post(
        f"{BROKER_MINT}?access_token={alice}", content=JSON.encode(mint()), headers=headers(JSON, alice)
    )

    assert error_of(leaked)["code"] == "invalid_argument"
    assert error_of(await call(client, JSON, mint(), alice))["message"] == "token revoked"


# limits


async def test_rate_limit_counts_every_attempt_and_answers_retry_info(
    client: httpx.AsyncClient, world: World, clock: FakeClock
) -> None:
    alice = world.token("alice")
    for _ in range(5):
        assert (await call(client, JSON, mint(), alice)).status_code == 200
    for _ in range(3):
        assert (await call(client, JSON, mint(tenant_id="globex"), alice)).status_code == 403
    for _ in range(2):
        assert (await call(client, JSON, mint(scopes=()), alice)).status_code == 400
    clock.advance(10)

    limited = await call(client, JSON, mint(), alice)

    assert limited.status_code == 429
    error = error_of(limited)
    assert error["code"] == "resource_exhausted"
    assert detail(error, "google.rpc.RetryInfo") == {"retryDelay": "50s"}
    assert (
        await call(client, JSON, mint(tenant_id="globex"), world.token("carol"))
    ).status_code == 200  # per principal
    clock.advance(61)
    assert (await call(client, JSON, mint(), alice)).status_code == 200


async def test_active_token_cap(clock: FakeClock) -> None:
    platform = Platform.build(MemoryStore(), PEPPER, clock, MintPolicy(active_minted_cap=3, mints_per_minute=100))
    world = await World.seed(platform)
    alice = world.token("alice")
    principal = await platform.store.get_principal("alice")
    assert principal is not None
    async with await serve_in_process(platform) as client:
        first = await minted(client, mint(ttl=120), alice)
        for _ in range(2):
            await minted(client, mint(ttl=600), alice)
        await platform.issuer.issue(principal, 600)  # operator-issued tokens do not count

        capped = await call(client, JSON, mint(), alice)
        clock.advance(121)  # the first minted token expires: room for one more
        after_expiry = await call(client, JSON, mint(), alice)

    assert capped.status_code == 429
    assert detail(error_of(capped), "google.rpc.RetryInfo") == {"retryDelay": "120s"}
    assert after_expiry.status_code == 200
    assert first.expires_at.seconds < clock.now


# secrets


async def test_no_token_value_ever_reaches_the_log(
    client: httpx.AsyncClient, world: World, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    alice = world.token("alice")
    child = await minted(client, mint(scopes=(MINT, READ)), alice)
    await call(client, JSON, mint(scopes=(DELETE,)), child.access_token)
    await call(client, JSON, mint(ttl=5), alice)
    await call(client, JSON, mint(), child.access_token[:-2] + "xx")
    await client.post(
        f"{BROKER_MINT}?t={child.access_token}", content=JSON.encode(mint()), headers=headers(JSON, alice)
    )
    await call(client, JSON, mint(), child.access_token)

    server_log = "\n".join(
        caplog.handler.format(r) for r in caplog.records if not r.name.startswith(("httpx", "httpcore"))
    )
    assert "revoked" in server_log
    for secret in [*world.all_tokens(), child.access_token]:
        assert secret not in server_log
