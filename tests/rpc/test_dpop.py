"""Key-bound tokens (RFC 9449 DPoP), for EC P-256/ES256 and Ed25519/EdDSA keys."""

from __future__ import annotations

import httpx
import pytest
from joserfc import jwk

from tests.connect import BROKER_MINT, JSON, VAULT_DELETE, error_of, headers
from tests.dpop import KeyKind, make_proof, new_key, thumbprint
from tests.proofs import build_proof
from tests.world import BASE_URL, FakeClock, World

MINT_URL = BASE_URL + BROKER_MINT
DELETE_URL = BASE_URL + VAULT_DELETE


@pytest.fixture(params=["ec", "ed25519"])
def key(request: pytest.FixtureRequest) -> jwk.Key:
    kind: KeyKind = request.param
    return new_key(kind)


async def mint_bound(
    client: httpx.AsyncClient,
    parent: str,
    key: jwk.Key,
    clock: FakeClock,
    proof: str | None = None,
    scheme: str = "Bearer",
    **body: object,
) -> httpx.Response:
    request = {"tenantId": "acme", "requestedScopes": ["vault.items.delete", "broker.tokens.mint"], **body}
    proof = make_proof(key, MINT_URL, parent, iat=clock.now) if proof is None else proof
    authorization = {"Authorization": f"{scheme} {parent}", "DPoP": proof}
    return await client.post(BROKER_MINT, json=request, headers=headers(JSON, **authorization))


async def bound_token(client: httpx.AsyncClient, world: World, key: jwk.Key, clock: FakeClock) -> str:
    response = await mint_bound(client, world.token("alice"), key, clock, popKeyId=thumbprint(key))
    assert response.status_code == 200, response.text
    token = response.json()["token"]
    assert token["popKeyId"] == thumbprint(key)
    return str(token["accessToken"])


async def delete(
    client: httpx.AsyncClient, token: str, item_id: str, proof: str | None, scheme: str = "DPoP"
) -> httpx.Response:
    extra = {"Authorization": f"{scheme} {token}"} | ({"DPoP": proof} if proof is not None else {})
    body = {"vaultId": "acme-private", "itemId": item_id, "baseVersion": 1}
    return await client.post(VAULT_DELETE, json=body, headers=headers(JSON, **extra))


def refused(response: httpx.Response, reason: str) -> bool:
    error = error_of(response)
    return response.status_code == 401 and error["code"] == "unauthenticated" and reason in error["message"]


# binding at mint time


async def test_minting_a_bound_token_needs_a_proof_of_that_key(
    client: httpx.AsyncClient, world: World, key: jwk.Key, clock: FakeClock
) -> None:
    alice = world.token("alice")
    body = {"tenantId": "acme", "requestedScopes": ["vault.items.read"], "popKeyId": thumbprint(key)}

    without = await client.post(BROKER_MINT, json=body, headers=headers(JSON, alice))
    other_key = await mint_bound(client, alice, new_key("ec"), clock, popKeyId=thumbprint(key))

    assert refused(without, "DPoP proof: missing DPoP header")
    assert refused(other_key, "jwk is not the key the token is bound to")
    assert (await bound_token(client, world, key, clock)).startswith("zkp_")


async def test_a_bound_tokens_children_keep_its_key(
    client: httpx.AsyncClient, world: World, key: jwk.Key, clock: FakeClock
) -> None:
    parent = await bound_token(client, world, key, clock)

    inherited = await mint_bound(client, parent, key, clock, scheme="DPoP")
    repeated = await mint_bound(client, parent, key, clock, scheme="DPoP", popKeyId=thumbprint(key))
    other = new_key("ed25519")
    rebound = await mint_bound(client, parent, key, clock, scheme="DPoP", popKeyId=thumbprint(other))

    assert inherited.json()["token"]["popKeyId"] == thumbprint(key)
    assert repeated.json()["token"]["popKeyId"] == thumbprint(key)
    assert rebound.status_code == 400
    assert error_of(rebound)["code"] == "invalid_argument"


async def test_a_bound_token_cannot_mint_without_a_proof(
    client: httpx.AsyncClient, world: World, key: jwk.Key, clock: FakeClock
) -> None:
    parent = await bound_token(client, world, key, clock)
    body = {"tenantId": "acme", "requestedScopes": ["vault.items.delete"]}

    response = await client.post(BROKER_MINT, json=body, headers=headers(JSON, Authorization=f"DPoP {parent}"))
    as_bearer = await mint_bound(client, parent, key, clock)

    assert refused(response, "missing DPoP header")
    assert refused(as_bearer, "must be sent as 'Authorization: DPoP <token>'")


# using a bound token


async def test_bound_token_with_a_correct_proof_is_accepted(
    client: httpx.AsyncClient, world: World, key: jwk.Key, clock: FakeClock
) -> None:
    token = await bound_token(client, world, key, clock)

    dpop_scheme = await delete(client, token, "item-1", make_proof(key, DELETE_URL, token, iat=clock.now))
    bearer_scheme = await delete(client, token, "item-2", make_proof(key, DELETE_URL, token, iat=clock.now), "Bearer")

    assert dpop_scheme.status_code == 200, dpop_scheme.text
    # RFC 9449 section 7.2: presented as a bearer token, a bound token is refused even with a proof.
    assert refused(bearer_scheme, "must be sent as 'Authorization: DPoP <token>'")


async def test_bound_token_without_a_proof_is_refused(
    client: httpx.AsyncClient, world: World, key: jwk.Key, clock: FakeClock
) -> None:
    token = await bound_token(client, world, key, clock)

    assert refused(await delete(client, token, "item-1", None), "missing DPoP header")
    assert refused(await delete(client, token, "item-1", None, "Bearer"), "'Authorization: DPoP <token>'")


async def test_proof_for_another_url_is_refused(
    client: httpx.AsyncClient, world: World, key: jwk.Key, clock: FakeClock
) -> None:
    token = await bound_token(client, world, key, clock)

    for url in (MINT_URL, "http://elsewhere.example/platform.v1.VaultService/DeleteItem"):
        assert refused(await delete(client, token, "item-1", make_proof(key, url, token, iat=clock.now)), "htu")


async def test_proof_for_another_method_is_refused(
    client: httpx.AsyncClient, world: World, key: jwk.Key, clock: FakeClock
) -> None:
    token = await bound_token(client, world, key, clock)

    proof = make_proof(key, DELETE_URL, token, method="GET", iat=clock.now)

    assert refused(await delete(client, token, "item-1", proof), "htm")


@pytest.mark.parametrize("skew", [-61, 61, -3600])
async def test_proof_outside_the_time_window_is_refused(
    client: httpx.AsyncClient, world: World, key: jwk.Key, clock: FakeClock, skew: int
) -> None:
    token = await bound_token(client, world, key, clock)

    proof = make_proof(key, DELETE_URL, token, iat=clock.now + skew)

    assert refused(await delete(client, token, "item-1", proof), "iat")


async def test_replayed_proof_is_refused(
    client: httpx.AsyncClient, world: World, key: jwk.Key, clock: FakeClock
) -> None:
    token = await bound_token(client, world, key, clock)
    proof = make_proof(key, DELETE_URL, token, iat=clock.now, jti="only-once")

    first = await delete(client, token, "item-1", proof)
    clock.advance(30)
    replay = await delete(client, token, "item-2", proof)

    assert first.status_code == 200
    assert refused(replay, "jti was already used")
    assert not (await world.item("acme-private", "item-2")).deleted


async def test_proof_for_another_token_is_refused(
    client: httpx.AsyncClient, world: World, key: jwk.Key, clock: FakeClock
) -> None:
    token = await bound_token(client, world, key, clock)

    proof = make_proof(key, DELETE_URL, world.token("alice"), iat=clock.now)

    assert refused(await delete(client, token, "item-1", proof), "ath")


async def test_proof_signed_by_another_key_is_refused(
    client: httpx.AsyncClient, world: World, key: jwk.Key, clock: FakeClock
) -> None:
    token = await bound_token(client, world, key, clock)

    for other in (new_key("ec"), new_key("ed25519")):
        proof = make_proof(other, DELETE_URL, token, iat=clock.now)
        assert refused(await delete(client, token, "item-1", proof), "jwk is not the key")


async def test_forged_or_malformed_proofs_are_refused(
    client: httpx.AsyncClient, world: World, key: jwk.Key, clock: FakeClock
) -> None:
    token = await bound_token(client, world, key, clock)
    good = make_proof(key, DELETE_URL, token, iat=clock.now)
    header, payload, signature = good.split(".")
    other_claims = make_proof(key, DELETE_URL, token, iat=clock.now).split(".")[1]
    swapped_payload = f"{header}.{other_claims}.{signature}"
    unsigned = build_proof(key, DELETE_URL, token, clock.now, header={"alg": "none"}, signature=b"")

    cases = {
        "not-a-jws": "not a compact JWS",
        swapped_payload: "signature",
        unsigned: "alg",
        f"{header}.{payload}": "not a compact JWS",
    }
    for proof, reason in cases.items():
        assert refused(await delete(client, token, "item-1", proof), reason), proof


async def test_two_dpop_headers_are_refused(
    client: httpx.AsyncClient, world: World, key: jwk.Key, clock: FakeClock
) -> None:
    token = await bound_token(client, world, key, clock)
    proof = make_proof(key, DELETE_URL, token, iat=clock.now)
    body = {"vaultId": "acme-private", "itemId": "item-1", "baseVersion": 1}

    response = await client.post(
        VAULT_DELETE,
        json=body,
        headers=[
            ("Content-Type", "application/json"),
            ("Connect-Protocol-Version", "1"),
            ("Authorization", f"DPoP {token}"),
            ("DPoP", proof),
            ("DPoP", proof),
        ],
    )

    assert refused(response, "more than one DPoP header")
