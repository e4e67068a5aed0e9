"""VaultService.DeleteItem through the whole app in-process: every row of the
contract's error table that applies, the tombstone, the repeat and the race."""

from __future__ import annotations

import asyncio
import base64
import logging
from typing import Any

import httpx
import pytest

from tests.actors import OPERATOR
from tests.connect import JSON, VAULT_DELETE, Codec, brief, detail, error_of, headers
from tests.world import PEPPER, FakeClock, World
from zkplatform.domain import tokens
from zkplatform.domain.models import Scope
from zkplatform_api.platform.v1 import vault_pb2


def delete(vault_id: str, item_id: str, base_version: int) -> vault_pb2.DeleteItemRequest:
    return vault_pb2.DeleteItemRequest(vault_id=vault_id, item_id=item_id, base_version=base_version)


async def call(
    client: httpx.AsyncClient,
    codec: Codec,
    request: vault_pb2.DeleteItemRequest,
    token: str | None,
    *,
    url: str = VAULT_DELETE,
    **extra: str,
) -> httpx.Response:
    return await client.post(url, content=codec.encode(request), headers=headers(codec, token, **extra))


# 200


async def test_delete_answers_the_tombstone_and_cursor(
    client: httpx.AsyncClient, codec: Codec, world: World, clock: FakeClock
) -> None:
    sequence_before = await world.platform.store.vault_sequence("acme-shared")

    response = await call(client, codec, delete("acme-shared", "item-1", 1), world.token("bob"))

    assert response.status_code == 200, response.text
    answer = codec.decode(response.content, vault_pb2.DeleteItemResponse)
    item = answer.item
    assert (item.item_id, item.vault_id, item.tenant_id) == ("item-1", "acme-shared", "acme")
    assert item.deleted
    assert item.version == 2
    assert item.updated_at.seconds == clock.now
    assert item.updated_at.nanos == 0
    assert not item.HasField("encrypted_payload")
    assert list(item.wrapped_keys) == []
    assert item.title_hash == ""
    assert item.kind == "login"
    assert answer.cursor.vault_id == "acme-shared"
    assert answer.cursor.sequence == sequence_before + 1


async def test_json_tombstone_has_the_contract_shape(client: httpx.AsyncClient, world: World) -> None:
    response = await client.post(
        VAULT_DELETE,
        json={"vaultId": "acme-private", "itemId": "item-2", "baseVersion": 1},
        headers=headers(JSON, world.token("alice")),
    )

    body = response.json()
    assert body["item"] == {
        "itemId": "item-2",
        "tenantId": "acme",
        "vaultId": "acme-private",
        "version": "2",
        "kind": "note",
        "updatedAt": "2027-01-15T08:00:00Z",
        "deleted": True,
        "purgeTime": "2027-04-15T08:00:00Z",  # the default retention, 90 days, after the delete
    }
    assert body["cursor"]["vaultId"] == "acme-private"
    assert int(body["cursor"]["sequence"]) >= 1
    assert body["cursor"]["epoch"] == await world.platform.store.epoch()


async def test_base_version_may_be_a_json_number_or_string(client: httpx.AsyncClient, world: World) -> None:
    for item_id, base_version in (("item-3", 1), ("item-4", "1")):
        response = await client.post(
            VAULT_DELETE,
            json={"vaultId": "acme-private", "itemId": item_id, "baseVersion": base_version},
            headers=headers(JSON, world.token("alice")),
        )
        assert response.status_code == 200, response.text


async def test_repeat_delete_answers_identically(
    client: httpx.AsyncClient, codec: Codec, world: World, clock: FakeClock
) -> None:
    first = await call(client, codec, delete("acme-private", "item-1", 1), world.token("alice"))
    clock.advance(30)

    repeats = [await call(client, codec, delete("acme-private", "item-1", v), world.token("alice")) for v in (1, 2, 7)]

    assert first.status_code == 200
    assert [r.status_code for r in repeats] == [200, 200, 200]
    assert all(r.content == first.content for r in repeats)


async def test_fifty_concurrent_deletes_answer_one_tombstone_and_cursor(
    client: httpx.AsyncClient, world: World
) -> None:
    sequence_before = await world.platform.store.vault_sequence("acme-shared")

    responses = await asyncio.gather(
        *(call(client, JSON, delete("acme-shared", "item-5", 1), world.token("alice")) for _ in range(50))
    )

    assert {r.status_code for r in responses} == {200}
    assert len({r.content for r in responses}) == 1
    assert int(responses[0].json()["cursor"]["sequence"]) == sequence_before + 1
    assert await world.platform.store.vault_sequence("acme-shared") == sequence_before + 1


# 401


@pytest.mark.parametrize(
    ("authorization", "reason"),
    [
        (None, "missing Authorization"),
        ("", "missing Authorization"),
        ("Basic YWxpY2U6c2VjcmV0", "must be 'Bearer"),
        ("Bearer", "must be 'Bearer"),
        ("Bearer not-a-token", "malformed token"),
    ],
)
async def test_missing_or_malformed_credentials_are_unauthenticated(
    client: httpx.AsyncClient, codec: Codec, authorization: str | None, reason: str
) -> None:
    extra = {} if authorization is None else {"Authorization": authorization}

    response = await call(client, codec, delete("acme-private", "item-1", 1), None, **extra)

    assert response.status_code == 401
    error = error_of(response)
    assert error["code"] == "unauthenticated"
    assert reason in error["message"]


async def test_token_with_a_bad_checksum_is_malformed(client: httpx.AsyncClient, world: World) -> None:
    token = world.token("alice")
    tampered = token[:-1] + ("A" if token[-1] != "A" else "B")

    response = await call(client, JSON, delete("acme-private", "item-1", 1), tampered)

    assert brief(error_of(response)) == {
        "code": "unauthenticated",
        "message": "malformed token",
        "reason": "TOKEN_INVALID",
    }


async def test_unknown_token_is_unauthenticated(client: httpx.AsyncClient) -> None:
    response = await call(client, JSON, delete("acme-private", "item-1", 1), tokens.new_token())

    assert brief(error_of(response)) == {
        "code": "unauthenticated",
        "message": "unknown token",
        "reason": "TOKEN_INVALID",
    }


async def test_expired_token_is_unauthenticated(client: httpx.AsyncClient, world: World, clock: FakeClock) -> None:
    clock.advance(3600)

    response = await call(client, JSON, delete("acme-private", "item-1", 1), world.token("alice"))

    assert brief(error_of(response)) == {
        "code": "unauthenticated",
        "message": "token expired",
        "reason": "TOKEN_EXPIRED",
    }


async def test_revoked_token_is_unauthenticated(client: httpx.AsyncClient, world: World) -> None:
    found = await world.platform.store.find_token(tokens.TokenHasher(PEPPER)(world.token("alice")))
    assert found is not None
    assert await world.platform.store.revoke_token_tree(found.token_id, OPERATOR)

    response = await call(client, JSON, delete("acme-private", "item-1", 1), world.token("alice"))

    assert brief(error_of(response)) == {
        "code": "unauthenticated",
        "message": "token revoked",
        "reason": "TOKEN_REVOKED",
    }


async def test_scheme_is_case_insensitive_and_dpop_scheme_is_accepted(client: httpx.AsyncClient, world: World) -> None:
    for scheme, item_id in (("bearer", "item-1"), ("DPoP", "item-2")):
        response = await call(
            client, JSON, delete("acme-private", item_id, 1), None, Authorization=f"{scheme} {world.token('alice')}"
        )
        assert response.status_code == 200, response.text


# 400: a token in the URL


@pytest.mark.parametrize("parameter", ["access_token", "token", "x"])
async def test_token_in_query_is_refused_and_revoked(client: httpx.AsyncClient, world: World, parameter: str) -> None:
    alice = world.token("alice")

    leaked = await call(
        client, JSON, delete("acme-private", "item-1", 1), alice, url=f"{VAULT_DELETE}?{parameter}={alice}"
    )
    afterwards = await call(client, JSON, delete("acme-private", "item-1", 1), alice)

    assert leaked.status_code == 400
    error = error_of(leaked)
    assert error["code"] == "invalid_argument"
    assert alice not in leaked.text
    assert [v["field"] for v in detail(error, "google.rpc.BadRequest")["fieldViolations"]] == [parameter]
    assert brief(error_of(afterwards)) == {
        "code": "unauthenticated",
        "message": "token revoked",
        "reason": "TOKEN_REVOKED",
    }
    assert not (await world.item("acme-private", "item-1")).deleted


async def test_access_token_parameter_is_refused_even_when_not_a_token(client: httpx.AsyncClient, world: World) -> None:
    response = await call(
        client, JSON, delete("acme-private", "item-1", 1), world.token("alice"), url=f"{VAULT_DELETE}?access_token=abc"
    )

    assert error_of(response)["code"] == "invalid_argument"


async def test_query_is_checked_before_authentication(client: httpx.AsyncClient, world: World) -> None:
    bob = world.token("bob")

    response = await call(client, JSON, delete("acme-private", "item-1", 1), None, url=f"{VAULT_DELETE}?t={bob}")

    assert response.status_code == 400
    assert error_of(await call(client, JSON, delete("acme-shared", "item-1", 1), bob))["message"] == "token revoked"


async def test_other_query_parameters_are_harmless(client: httpx.AsyncClient, world: World) -> None:
    response = await call(
        client, JSON, delete("acme-private", "item-1", 1), world.token("alice"), url=f"{VAULT_DELETE}?trace=1&x=y"
    )

    assert response.status_code == 200


# 400: malformed fields (after authentication)


@pytest.mark.parametrize(
    ("request_fields", "bad_fields"),
    [
        ({"vault_id": "", "item_id": "", "base_version": 0}, {"vaultId", "itemId", "baseVersion"}),
        ({"vault_id": "acme-private", "item_id": "item-1", "base_version": -1}, {"baseVersion"}),
        ({"vault_id": "acme private", "item_id": "item-1", "base_version": 1}, {"vaultId"}),
        ({"vault_id": "acme-private", "item_id": "_item", "base_version": 1}, {"itemId"}),
        ({"vault_id": "v" * 65, "item_id": "item-1", "base_version": 1}, {"vaultId"}),
    ],
)
async def test_malformed_requests_name_each_field(
    client: httpx.AsyncClient, codec: Codec, world: World, request_fields: dict[str, Any], bad_fields: set[str]
) -> None:
    response = await call(client, codec, vault_pb2.DeleteItemRequest(**request_fields), world.token("alice"))

    assert response.status_code == 400
    error = error_of(response)
    assert error["code"] == "invalid_argument"
    violations = detail(error, "google.rpc.BadRequest")["fieldViolations"]
    assert {v["field"] for v in violations} == bad_fields


async def test_authentication_comes_before_field_checks(client: httpx.AsyncClient) -> None:
    response = await call(client, JSON, vault_pb2.DeleteItemRequest(), None)

    assert error_of(response)["code"] == "unauthenticated"


# 403


async def test_token_without_delete_scope_is_denied(client: httpx.AsyncClient, world: World) -> None:
    alice = await world.platform.store.get_principal("alice")
    assert alice is not None
    reader = await world.platform.issuer.issue(alice, 600, [Scope.VAULT_ITEMS_READ])

    response = await call(client, JSON, delete("acme-private", "item-1", 1), reader.secret)

    assert response.status_code == 403
    error = error_of(response)
    assert error["code"] == "permission_denied"
    assert "vault.items.delete" in error["message"]


@pytest.mark.parametrize(
    ("principal", "vault_id"),
    [
        ("bob", "acme-private"),  # same tenant, not a member
        ("carol", "acme-shared"),  # another tenant
        ("bob", "no-such-vault"),  # does not exist: answers like the others
    ],
)
async def test_non_members_are_denied_before_the_item_is_looked_up(
    client: httpx.AsyncClient, world: World, principal: str, vault_id: str
) -> None:
    for item_id in ("item-1", "no-such-item"):
        response = await call(client, JSON, delete(vault_id, item_id, 1), world.token(principal))

        assert response.status_code == 403
        assert brief(error_of(response)) == {
            "code": "permission_denied",
            "message": "the caller is not a member of this vault",
            "reason": "VAULT_ACCESS_DENIED",
        }


# 404 and 409


async def test_unknown_item_is_not_found(client: httpx.AsyncClient, world: World) -> None:
    response = await call(client, JSON, delete("acme-private", "item-404", 1), world.token("alice"))

    assert response.status_code == 404
    assert error_of(response)["code"] == "not_found"


async def test_stale_base_version_is_aborted_with_the_current_version(
    client: httpx.AsyncClient, codec: Codec, world: World
) -> None:
    response = await call(client, codec, delete("acme-private", "item-1", 3), world.token("alice"))

    assert response.status_code == 409
    error = error_of(response)
    assert error["code"] == "aborted"
    info = detail(error, "google.rpc.ErrorInfo")
    assert info["reason"] == "VERSION_MISMATCH"
    assert info["metadata"] == {"currentVersion": "1"}
    (raw,) = [d["value"] for d in error["details"] if d["type"] == "google.rpc.ErrorInfo"]
    assert base64.b64decode(raw + "=" * (-len(raw) % 4))  # the binary form is there for typed clients
    assert not (await world.item("acme-private", "item-1")).deleted


# secrets


async def test_no_token_value_ever_reaches_the_log(
    client: httpx.AsyncClient, world: World, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    alice, bob, carol = world.token("alice"), world.token("bob"), world.token("carol")
    await call(client, JSON, delete("acme-private", "item-1", 1), alice)
    await call(client, JSON, delete("acme-private", "item-1", 5), alice)
    await call(client, JSON, delete("acme-private", "item-2", 9), alice)
    await call(client, JSON, delete("acme-private", "item-3", 1), bob)
    await call(client, JSON, vault_pb2.DeleteItemRequest(), carol)
    await call(client, JSON, delete("acme-private", "item-1", 1), alice[:-1] + "x")
    await call(client, JSON, delete("acme-shared", "item-1", 1), carol, url=f"{VAULT_DELETE}?access_token={carol}")
    await call(client, JSON, delete("acme-shared", "item-1", 1), carol)
    clock.advance(7200)
    await call(client, JSON, delete("acme-shared", "item-1", 1), bob)

    # The server's records only: the test's own HTTP client logs the URLs it calls.
    server_records = [r for r in caplog.records if not r.name.startswith(("httpx", "httpcore"))]
    logged = "\n".join(f"{caplog.handler.format(r)} {getattr(r, 'fields', '')}" for r in server_records)
    by_token = {(r.getMessage(), getattr(r, "fields", {}).get("token_id", "")[:4]) for r in server_records}
    carol_record = await world.platform.store.find_token(tokens.TokenHasher(PEPPER)(carol))
    assert carol_record is not None
    # Each refusal is logged with the token's public id as a field: the leak and revocation, then
    # the revoked token's use.
    carol_id = {"token_id": carol_record.token_id}
    assert any(
        r.getMessage().startswith("a token sent in a URL") and getattr(r, "fields", None) == carol_id
        for r in server_records
    )
    assert any(
        r.getMessage() == "authentication refused: token revoked" and getattr(r, "fields", None) == carol_id
        for r in server_records
    )
    assert ("authentication refused: token expired", "tok_") in by_token
    for token in world.all_tokens():
        assert token not in logged
        assert token[len(tokens.PREFIX) :] not in logged
