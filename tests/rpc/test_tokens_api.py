"""BrokerService.ListTokens and RevokeToken through the whole app in-process."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.connect import BROKER_MINT, JSON, VAULT_DELETE, Codec, brief, detail, error_of, headers
from tests.world import FakeClock, World
from zkplatform.domain.models import Scope
from zkplatform_api.platform.v1 import broker_pb2

LIST = "/platform.v1.BrokerService/ListTokens"
REVOKE = "/platform.v1.BrokerService/RevokeToken"
READ, WRITE, DELETE, MINT, MANAGE, *_ = (s.value for s in Scope)  # then the directory scopes


async def post(client: httpx.AsyncClient, path: str, body: dict[str, Any], token: str) -> httpx.Response:
    return await client.post(path, json=body, headers=headers(JSON, token))


async def mint(client: httpx.AsyncClient, token: str, *scopes: str, tenant: str = "acme") -> broker_pb2.Token:
    body = {"tenantId": tenant, "requestedScopes": list(scopes or (READ, DELETE, MINT))}
    response = await post(client, BROKER_MINT, body, token)
    assert response.status_code == 200, response.text
    return JSON.decode(response.content, broker_pb2.MintUserApiTokenResponse).token


async def listed(client: httpx.AsyncClient, token: str, **body: Any) -> list[dict[str, Any]]:
    response = await post(client, LIST, body, token)
    assert response.status_code == 200, response.text
    tokens: list[dict[str, Any]] = response.json().get("tokens", [])
    return tokens


async def works(client: httpx.AsyncClient, token: str) -> bool:
    """Whether the token still authenticates (a delete of an item that is not there: 404, not 401)."""
    body = {"vaultId": "acme-shared", "itemId": "no-such-item", "baseVersion": "1"}
    response = await post(client, VAULT_DELETE, body, token)
    assert response.status_code in (401, 403, 404), response.text
    return response.status_code != 401


async def tree(client: httpx.AsyncClient, root: str) -> list[broker_pb2.Token]:
    """Three levels minted from `root`: a child, a grandchild, a great-grandchild, and a sibling."""
    child = await mint(client, root)
    grandchild = await mint(client, child.access_token)
    great = await mint(client, grandchild.access_token, READ)
    sibling = await mint(client, root, READ)
    return [child, grandchild, great, sibling]


# RevokeToken


async def test_revoking_a_token_revokes_everything_minted_from_it(client: httpx.AsyncClient, world: World) -> None:
    child, grandchild, great, sibling = await tree(client, world.token("alice"))

    response = await post(client, REVOKE, {"tokenId": child.token_id}, world.token("alice"))

    assert response.status_code == 200, response.text
    assert response.json() == {"revokedTokenIds": sorted([child.token_id, grandchild.token_id, great.token_id])}
    assert [await works(client, t.access_token) for t in (child, grandchild, great)] == [False, False, False]
    assert await works(client, sibling.access_token)
    assert await works(client, world.token("alice"))


async def test_revoking_again_answers_an_empty_list(client: httpx.AsyncClient, world: World, codec: Codec) -> None:
    child = await mint(client, world.token("alice"))
    await post(client, REVOKE, {"tokenId": child.token_id}, world.token("alice"))

    request = broker_pb2.RevokeTokenRequest(token_id=child.token_id)
    response = await client.post(REVOKE, content=codec.encode(request), headers=headers(codec, world.token("alice")))

    assert response.status_code == 200, response.text
    assert list(codec.decode(response.content, broker_pb2.RevokeTokenResponse).revoked_token_ids) == []


async def test_any_token_logs_itself_out_with_its_tree_without_a_scope(client: httpx.AsyncClient, world: World) -> None:
    reader = await mint(client, world.token("alice"), READ, MINT)  # no broker.tokens.manage
    below = await mint(client, reader.access_token, READ)

    response = await post(client, REVOKE, {"tokenId": reader.token_id}, reader.access_token)

    assert response.json() == {"revokedTokenIds": sorted([reader.token_id, below.token_id])}
    assert not await works(client, below.access_token)


async def test_a_logout_repeated_with_the_token_it_revoked_is_unauthenticated(
    client: httpx.AsyncClient, world: World
) -> None:
    """As broker.proto says of a repeat: the revoked token no longer authenticates even the repeat."""
    reader = await mint(client, world.token("alice"), READ, MINT)
    await post(client, REVOKE, {"tokenId": reader.token_id}, reader.access_token)

    repeat = await post(client, REVOKE, {"tokenId": reader.token_id}, reader.access_token)

    assert repeat.status_code == 401, repeat.text
    assert error_of(repeat)["code"] == "unauthenticated"
    assert error_of(repeat)["message"] == "token revoked"


async def test_a_token_without_the_scope_revokes_its_descendants_but_not_its_siblings(
    client: httpx.AsyncClient, world: World
) -> None:
    reader = await mint(client, world.token("alice"), READ, MINT)
    below = await mint(client, reader.access_token, READ, MINT)
    deeper = await mint(client, below.access_token, READ)
    sibling = await mint(client, world.token("alice"), READ)

    revoked = await post(client, REVOKE, {"tokenId": deeper.token_id}, reader.access_token)
    refused = await post(client, REVOKE, {"tokenId": sibling.token_id}, reader.access_token)

    assert revoked.json() == {"revokedTokenIds": [deeper.token_id]}
    assert brief(error_of(refused)) == {
        "code": "not_found",
        "message": "no such token",
        "reason": "TOKEN_NOT_FOUND",
    }
    assert await works(client, sibling.access_token)


async def test_a_member_with_the_scope_revokes_its_own_tokens_only(client: httpx.AsyncClient, world: World) -> None:
    alices = await mint(client, world.token("alice"), READ)
    bob = world.token("bob")  # a member: broker.tokens.manage, no mint
    bobs_id = (await listed(client, bob))[0]["tokenId"]

    denied = await post(client, REVOKE, {"tokenId": alices.token_id}, bob)

    assert error_of(denied)["code"] == "not_found"
    assert await works(client, alices.access_token)
    assert (await post(client, REVOKE, {"tokenId": bobs_id}, bob)).json() == {"revokedTokenIds": [bobs_id]}
    assert not await works(client, bob)


async def test_an_owner_with_the_scope_revokes_any_token_of_its_tenant(client: httpx.AsyncClient, world: World) -> None:
    bobs_id = (await listed(client, world.token("bob")))[0]["tokenId"]

    response = await post(client, REVOKE, {"tokenId": bobs_id}, world.token("alice"))

    assert response.json() == {"revokedTokenIds": [bobs_id]}
    assert not await works(client, world.token("bob"))


async def test_unknown_foreign_and_forbidden_tokens_answer_identically(client: httpx.AsyncClient, world: World) -> None:
    carols_id = (await listed(client, world.token("carol")))[0]["tokenId"]
    alices = await mint(client, world.token("alice"), READ)
    unknown = "tok_" + "0" * 24

    answers = [
        await post(client, REVOKE, {"tokenId": token_id}, world.token(caller))
        for token_id, caller in ((unknown, "alice"), (carols_id, "alice"), (alices.token_id, "bob"))
    ]

    bodies = [brief(error_of(a)) for a in answers]
    assert [a.status_code for a in answers] == [404, 404, 404]
    assert bodies == [{"code": "not_found", "message": "no such token", "reason": "TOKEN_NOT_FOUND"}] * 3
    assert await works(client, world.token("carol"))


@pytest.mark.parametrize("token_id", ["", "tok_short", "TOK_" + "0" * 24, "zkp_" + "a" * 49, "tok_" + "G" * 24])
async def test_a_token_id_of_the_wrong_form_is_invalid(client: httpx.AsyncClient, world: World, token_id: str) -> None:
    response = await post(client, REVOKE, {"tokenId": token_id}, world.token("alice"))

    error = error_of(response)
    assert error["code"] == "invalid_argument"
    violations = detail(error, "google.rpc.BadRequest")["fieldViolations"]
    assert [v["field"] for v in violations] == ["tokenId"]


# ListTokens


async def test_list_shows_live_tokens_newest_first_without_secrets(
    client: httpx.AsyncClient, world: World, clock: FakeClock
) -> None:
    alice = world.token("alice")
    clock.advance(10)
    first = await mint(client, alice, READ)
    clock.advance(10)
    second = await mint(client, alice, DELETE)
    clock.advance(10)
    revoked = await mint(client, alice, READ)
    await post(client, REVOKE, {"tokenId": revoked.token_id}, alice)

    tokens = await listed(client, alice)

    assert [t["tokenId"] for t in tokens][:2] == [second.token_id, first.token_id]
    assert revoked.token_id not in [t["tokenId"] for t in tokens]
    root = tokens[-1]
    assert root["origin"] == "TOKEN_ORIGIN_OPERATOR"
    assert "parentTokenId" not in root
    newest = tokens[0]
    assert newest["origin"] == "TOKEN_ORIGIN_MINTED"
    assert newest["parentTokenId"] == root["tokenId"]
    assert set(newest) == {
        "tokenId",
        "tenantId",
        "principalId",
        "scopes",
        "role",
        "issuedAt",
        "expiresAt",
        "parentTokenId",
        "origin",
    }  # never used yet: no lastUsedAt; and never a secret
    for token in (first, second):
        assert token.access_token not in str(tokens)


async def test_last_use_is_recorded_at_most_once_a_minute(
    client: httpx.AsyncClient, world: World, clock: FakeClock
) -> None:
    alice = world.token("alice")
    minted = await mint(client, alice, READ, DELETE)
    start = clock.now

    await works(client, minted.access_token)
    clock.advance(59)
    await works(client, minted.access_token)
    seen_early = next(t for t in await listed(client, alice) if t["tokenId"] == minted.token_id)
    clock.advance(1)
    await works(client, minted.access_token)
    seen_later = next(t for t in await listed(client, alice) if t["tokenId"] == minted.token_id)

    assert seen_early["lastUsedAt"] == _iso(start)
    assert seen_later["lastUsedAt"] == _iso(start + 60)


def _iso(seconds: int) -> str:
    from datetime import UTC, datetime  # noqa: PLC0415 # only here

    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


async def test_the_scope_is_needed_to_list(client: httpx.AsyncClient, world: World) -> None:
    reader = await mint(client, world.token("alice"), READ)

    response = await post(client, LIST, {}, reader.access_token)

    assert error_of(response)["code"] == "permission_denied"


async def test_an_owner_lists_anyone_of_its_tenant_a_member_only_itself(
    client: httpx.AsyncClient, world: World
) -> None:
    alice, bob = world.token("alice"), world.token("bob")

    everyone = await listed(client, alice, principalId="-")
    bobs = await listed(client, alice, principalId="bob")
    own = await listed(client, bob, principalId="bob")
    refused = [await post(client, LIST, {"principalId": p}, bob) for p in ("alice", "-")]
    carols = await listed(client, alice, principalId="carol")

    assert {t["principalId"] for t in everyone} == {"alice", "bob", "dave"}
    assert [t["principalId"] for t in bobs] == ["bob"]
    assert [t["tokenId"] for t in own] == [t["tokenId"] for t in bobs]  # lastUsedAt moved: bob just called
    assert [error_of(r)["code"] for r in refused] == ["permission_denied", "permission_denied"]
    assert carols == []  # another tenant's principal: nothing, as for one that does not exist


async def test_pages_follow_one_another_and_are_bound_to_their_listing(
    client: httpx.AsyncClient, world: World, clock: FakeClock
) -> None:
    alice = world.token("alice")
    for _ in range(5):
        clock.advance(1)
        await mint(client, alice, READ)
    every = [t["tokenId"] for t in await listed(client, alice, pageSize=100)]

    seen, page_token = [], ""
    for _ in range(10):
        response = (await post(client, LIST, {"pageSize": 2, "pageToken": page_token}, alice)).json()
        seen += [t["tokenId"] for t in response["tokens"]]
        if not (page_token := response.get("nextPageToken", "")):
            break
    first = (await post(client, LIST, {"pageSize": 2}, alice)).json()["nextPageToken"]
    elsewhere = await post(client, LIST, {"pageSize": 2, "pageToken": first, "principalId": "-"}, alice)
    tampered = await post(client, LIST, {"pageToken": first[:-2] + ("AA" if first[-2:] != "AA" else "BB")}, alice)
    foreign = await post(client, LIST, {"pageToken": first}, world.token("carol"))

    assert seen == every
    assert len(every) == 6
    for response in (elsewhere, tampered, foreign):
        error = error_of(response)
        assert error["code"] == "invalid_argument"
        assert [v["field"] for v in detail(error, "google.rpc.BadRequest")["fieldViolations"]] == ["pageToken"]


@pytest.mark.parametrize(
    ("body", "field"),
    [({"pageSize": -1}, "pageSize"), ({"principalId": "bad id"}, "principalId")],
)
async def test_list_fields_out_of_bounds_are_named(
    client: httpx.AsyncClient, world: World, body: dict[str, Any], field: str
) -> None:
    error = error_of(await post(client, LIST, body, world.token("alice")))

    assert error["code"] == "invalid_argument"
    assert [v["field"] for v in detail(error, "google.rpc.BadRequest")["fieldViolations"]] == [field]


async def test_listing_and_revoking_do_not_count_as_mint_attempts(client: httpx.AsyncClient, world: World) -> None:
    alice = world.token("alice")
    for _ in range(12):  # more than the 10 mint attempts a minute
        await listed(client, alice)

    assert (await post(client, BROKER_MINT, {"tenantId": "acme", "requestedScopes": [READ]}, alice)).status_code == 200


async def test_list_answers_are_never_cached(client: httpx.AsyncClient, world: World) -> None:
    response = await post(client, LIST, {}, world.token("alice"))

    assert response.status_code == 200
    assert response.headers["cache-control"] == "no-store"
