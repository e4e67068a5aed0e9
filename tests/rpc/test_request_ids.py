"""Request ids (AIP-155) through the whole app in-process, on every store: a repeat of a
successful write with the same `requestId` answers what the first call answered, however the
item moved on since; the id with another request is REQUEST_ID_REUSED; a repeated mint names
its token and mints nothing."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from google.protobuf import json_format
from google.protobuf.message import Message

from tests.actors import OPERATOR
from tests.connect import BROKER_MINT, JSON, VAULT_DELETE, Codec, detail, error_of, headers
from tests.store.stores import closing, migrated
from tests.world import PEPPER, FakeClock, World
from zkplatform.domain.request_ids import RETENTION_SECONDS
from zkplatform.store import open_store
from zkplatform.wiring import Platform
from zkplatform_api.platform.v1 import broker_pb2, vault_pb2

CREATE = "/platform.v1.VaultService/CreateItem"
UPDATE = "/platform.v1.VaultService/UpdateItem"
LIST_TOKENS = "/platform.v1.BrokerService/ListTokens"
REVOKE = "/platform.v1.BrokerService/RevokeToken"
PATHS: dict[type[Message], str] = {
    vault_pb2.CreateItemRequest: CREATE,
    vault_pb2.UpdateItemRequest: UPDATE,
    vault_pb2.DeleteItemRequest: VAULT_DELETE,
    broker_pb2.MintUserApiTokenRequest: BROKER_MINT,
    broker_pb2.RevokeTokenRequest: REVOKE,
}
ID_A = "0b5c3a52-8d0e-4f3a-9c1b-6d7e8f9a0b1c"
ID_B = "7f3e2d1c-0b9a-4876-a543-21fedcba9876"
VAULT = "acme-shared"  # alice and bob are members


@pytest.fixture(params=["memory", "sqlite", "postgresql"])
async def platform(
    request: pytest.FixtureRequest, clock: FakeClock, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Platform]:
    """The app on each store: what a repeat answers comes from the store's record."""
    match request.param:
        case "memory":
            url = "memory:"
        case "sqlite":
            url = f"sqlite:///{tmp_path_factory.mktemp('sqlite')}/store.db"
        case _:
            url = request.getfixturevalue("postgres_url")
    await migrated(url)
    async with closing(open_store(url)) as store:
        yield Platform.build(store, PEPPER, clock)


def create(item_id: str, tag: str = "a", request_id: str = "") -> vault_pb2.CreateItemRequest:
    return vault_pb2.CreateItemRequest(
        vault_id=VAULT,
        item_id=item_id,
        kind="login",
        title_hash=f"th-{tag}",
        encrypted_payload=vault_pb2.EncryptedPayload(alg="A256GCM", nonce="bm9uY2U", ciphertext=f"c2VjcmV0{tag}"),
        wrapped_keys=[vault_pb2.WrappedKey(recipient_id="alice", wrap_alg="A256KW", wrapped_key=f"a2V5{tag}")],
        request_id=request_id,
    )


def update(item_id: str, base_version: int, tag: str, request_id: str = "") -> vault_pb2.UpdateItemRequest:
    as_create = create(item_id, tag)
    return vault_pb2.UpdateItemRequest(
        vault_id=VAULT,
        item_id=item_id,
        kind=as_create.kind,
        title_hash=as_create.title_hash,
        encrypted_payload=as_create.encrypted_payload,
        wrapped_keys=as_create.wrapped_keys,
        base_version=base_version,
        request_id=request_id,
    )


def delete(item_id: str, base_version: int, request_id: str = "") -> vault_pb2.DeleteItemRequest:
    return vault_pb2.DeleteItemRequest(
        vault_id=VAULT, item_id=item_id, base_version=base_version, request_id=request_id
    )


def mint(request_id: str = "", scopes: tuple[str, ...] = ("vault.items.read",)) -> broker_pb2.MintUserApiTokenRequest:
    return broker_pb2.MintUserApiTokenRequest(tenant_id="acme", requested_scopes=scopes, request_id=request_id)


async def call(client: httpx.AsyncClient, request: Message, token: str, codec: Codec = JSON) -> httpx.Response:
    return await client.post(PATHS[type(request)], content=codec.encode(request), headers=headers(codec, token))


async def answer(client: httpx.AsyncClient, request: Message, token: str, codec: Codec = JSON) -> dict[str, Any]:
    """The answer of a call that must succeed, as JSON (a binary one decoded and rendered)."""
    response = await call(client, request, token, codec)
    assert response.status_code == 200, response.text
    if codec is JSON:
        found: dict[str, Any] = response.json()
        return found
    response_class = {
        vault_pb2.CreateItemRequest: vault_pb2.CreateItemResponse,
        vault_pb2.UpdateItemRequest: vault_pb2.UpdateItemResponse,
        vault_pb2.DeleteItemRequest: vault_pb2.DeleteItemResponse,
    }[type(request)]
    return json_format.MessageToDict(codec.decode(response.content, response_class))


def code_of(response: httpx.Response) -> str:
    code: str = error_of(response)["code"]
    return code


def refusal(response: httpx.Response) -> tuple[int, str, dict[str, Any]]:
    """The status, the code and the ErrorInfo of a refused call."""
    error = error_of(response)
    return response.status_code, error["code"], detail(error, "google.rpc.ErrorInfo")


async def audit_events(world: World) -> int:
    return len(await world.platform.store.audit_records("acme", 0, 100_000))


# the issue's cases


async def test_an_update_retried_after_a_later_update_answers_as_it_first_did(
    client: httpx.AsyncClient, world: World, codec: Codec
) -> None:
    alice = world.token("alice")
    await answer(client, create("retried"), alice)
    first = await answer(client, update("retried", 1, "A", ID_A), alice, codec)
    await answer(client, update("retried", 2, "B", ID_B), alice)
    events = await audit_events(world)

    retried = await answer(client, update("retried", 1, "A", ID_A), alice, codec)

    assert retried == first
    assert retried["item"]["version"] == "2"
    assert (await world.item(VAULT, "retried")).version == 3  # nothing changed
    assert await audit_events(world) == events  # and nothing was recorded as changed


async def test_a_create_retried_after_a_later_update_answers_as_it_first_did(
    client: httpx.AsyncClient, world: World, codec: Codec
) -> None:
    alice = world.token("alice")
    first = await answer(client, create("made", request_id=ID_A), alice, codec)
    await answer(client, update("made", 1, "B"), alice)

    assert await answer(client, create("made", request_id=ID_A), alice, codec) == first
    # Without the id, the content rule still answers as before: the item moved on.
    assert code_of(await call(client, create("made"), alice)) == "already_exists"


async def test_the_same_id_for_another_request_is_refused(client: httpx.AsyncClient, world: World) -> None:
    alice = world.token("alice")
    await answer(client, create("first", request_id=ID_A), alice)

    for other in (create("first", tag="other", request_id=ID_A), create("second", request_id=ID_A)):
        response = await call(client, other, alice)
        status, code, info = refusal(response)
        assert (status, code, info["reason"]) == (400, "invalid_argument", "REQUEST_ID_REUSED")
        violations = detail(error_of(response), "google.rpc.BadRequest")["fieldViolations"]
        assert [v["field"] for v in violations] == ["requestId"]
    another_method = refusal(await call(client, delete("first", 1, ID_A), alice))
    assert another_method[2]["reason"] == "REQUEST_ID_REUSED"
    assert await world.platform.store.get_item(VAULT, "second") is None
    assert not (await world.item(VAULT, "first")).deleted


async def test_a_repeated_mint_names_its_token_and_mints_none(client: httpx.AsyncClient, world: World) -> None:
    alice = world.token("alice")
    first = (await answer(client, mint(ID_A), alice))["token"]

    response = await call(client, mint(ID_A), alice)

    status, code, info = refusal(response)
    assert (status, code, info["reason"], info["metadata"]) == (
        409,
        "already_exists",
        "TOKEN_ALREADY_MINTED",
        {"tokenId": first["tokenId"]},
    )
    assert first["accessToken"] not in response.text
    tokens = await client.post(LIST_TOKENS, json={}, headers=headers(JSON, alice))
    minted = [t for t in tokens.json()["tokens"] if t.get("origin") == "TOKEN_ORIGIN_MINTED"]
    assert [t["tokenId"] for t in minted] == [first["tokenId"]]
    other = refusal(await call(client, mint(ID_A, scopes=("vault.items.write",)), alice))
    assert other[2]["reason"] == "REQUEST_ID_REUSED"


async def test_a_repeated_delete_and_revocation_answer_as_they_first_did(
    client: httpx.AsyncClient, world: World
) -> None:
    alice = world.token("alice")
    await answer(client, create("doomed"), alice)
    tombstone = await answer(client, delete("doomed", 1, ID_A), alice)
    child = (await answer(client, mint(), alice))["token"]
    revoke = broker_pb2.RevokeTokenRequest(token_id=child["tokenId"], request_id=ID_B)
    revoked = await answer(client, revoke, alice)

    assert await answer(client, delete("doomed", 1, ID_A), alice) == tombstone
    assert revoked == {"revokedTokenIds": [child["tokenId"]]}
    assert await answer(client, revoke, alice) == revoked  # without the id: an empty list
    assert await answer(client, broker_pb2.RevokeTokenRequest(token_id=child["tokenId"]), alice) == {}


async def test_another_principals_request_id_is_its_own(client: httpx.AsyncClient, world: World) -> None:
    await answer(client, create("alices", request_id=ID_A), world.token("alice"))

    bobs = await answer(client, create("bobs", request_id=ID_A), world.token("bob"))

    assert bobs["item"]["itemId"] == "bobs"


async def test_a_record_answers_for_24_hours(client: httpx.AsyncClient, world: World, clock: FakeClock) -> None:
    alice = world.token("alice")
    await answer(client, create("aging"), alice)
    first = await answer(client, update("aging", 1, "A", ID_A), alice)
    await answer(client, update("aging", 2, "B"), alice)

    clock.advance(RETENTION_SECONDS - 1)
    alice = (await world.platform.issuer.issue_for("alice", 3600)).secret  # hers of a day ago expired
    assert await answer(client, update("aging", 1, "A", ID_A), alice) == first
    clock.advance(1)
    _, code, info = refusal(await call(client, update("aging", 1, "A", ID_A), alice))
    assert (code, info["reason"], info["metadata"]["currentVersion"]) == ("aborted", "VERSION_MISMATCH", "3")


async def test_a_failed_call_is_run_again(client: httpx.AsyncClient, world: World) -> None:
    alice = world.token("alice")
    assert code_of(await call(client, update("later", 1, "A", ID_A), alice)) == "not_found"
    await answer(client, create("later"), alice)

    assert (await answer(client, update("later", 1, "A", ID_A), alice))["item"]["version"] == "2"


async def test_a_repeat_is_checked_like_a_first_call(client: httpx.AsyncClient, world: World) -> None:
    """Membership is checked before the record is read: a principal that left the vault reads
    nothing of it, repeats included."""
    bob = world.token("bob")
    await answer(client, create("bobs", request_id=ID_A), bob)
    await world.platform.store.remove_vault_member(VAULT, "bob", OPERATOR)

    assert code_of(await call(client, create("bobs", request_id=ID_A), bob)) == "permission_denied"


async def test_a_request_id_must_be_a_uuid(client: httpx.AsyncClient, world: World) -> None:
    response = await call(client, create("nope", request_id="not-a-uuid"), world.token("alice"))

    assert response.status_code == 400
    violations = detail(error_of(response), "google.rpc.BadRequest")["fieldViolations"]
    assert [v["field"] for v in violations] == ["requestId"]


async def test_an_id_in_capitals_is_the_same_id(client: httpx.AsyncClient, world: World) -> None:
    alice = world.token("alice")
    first = await answer(client, create("cased", request_id=ID_A), alice)
    await answer(client, update("cased", 1, "B"), alice)

    assert await answer(client, create("cased", request_id=ID_A.upper()), alice) == first


async def test_a_repeat_recognised_by_its_content_is_recorded_under_its_id(
    client: httpx.AsyncClient, world: World
) -> None:
    """A call with an id that succeeds without a change (its content repeats what was done, say
    by a first attempt sent without the id) is answered again as it was, like any success."""
    alice = world.token("alice")
    await answer(client, create("twice"), alice)
    answered = await answer(client, create("twice", request_id=ID_A), alice)
    await answer(client, update("twice", 1, "B"), alice)

    assert await answer(client, create("twice", request_id=ID_A), alice) == answered


async def test_an_update_mask_in_another_order_is_the_same_request(
    client: httpx.AsyncClient, world: World, codec: Codec
) -> None:
    alice = world.token("alice")
    await answer(client, create("set"), alice)
    first = update("set", 1, "B", ID_A)
    first.update_mask.paths.extend(["kind", "title_hash"])  # JSON: "kind,titleHash"
    answered = await answer(client, first, alice, codec)
    events = await audit_events(world)

    again = update("set", 1, "B", ID_A)
    again.update_mask.paths.extend(["title_hash", "kind"])  # JSON: "titleHash,kind"

    assert await answer(client, again, alice, codec) == answered
    assert await audit_events(world) == events  # answered from the record: nothing done twice


async def test_the_fingerprint_covers_every_field_the_update_mask_included(
    client: httpx.AsyncClient, world: World
) -> None:
    alice = world.token("alice")
    await answer(client, create("masked"), alice)
    whole = update("masked", 1, "A", ID_A)
    await answer(client, whole, alice)

    keys_only = update("masked", 1, "A", ID_A)
    keys_only.update_mask.paths.append("wrapped_keys")
    status, code, info = refusal(await call(client, keys_only, alice))

    assert (status, code, info["reason"]) == (400, "invalid_argument", "REQUEST_ID_REUSED")
