"""VaultService.CreateItem, UpdateItem, GetItem and ListItems through the whole
app in-process: each RPC's answer, the order of its checks, repeats and races,
every bad input the contract names (refused with nothing stored), paging."""

from __future__ import annotations

import asyncio
import base64
from typing import Any

import httpx
import pytest
from google.protobuf import json_format
from google.protobuf.message import Message

from tests.connect import JSON, PROTO, Codec, brief, detail, error_of, headers
from tests.world import FakeClock, World
from zkplatform.domain.models import Scope
from zkplatform_api.platform.v1 import vault_pb2

SERVICE = "/platform.v1.VaultService"
CREATE = f"{SERVICE}/CreateItem"
UPDATE = f"{SERVICE}/UpdateItem"
GET = f"{SERVICE}/GetItem"
LIST = f"{SERVICE}/ListItems"
DELETE = f"{SERVICE}/DeleteItem"
NOT_A_MEMBER = {
    "code": "permission_denied",
    "message": "the caller is not a member of this vault",
    "reason": "VAULT_ACCESS_DENIED",
}
MAX_CIPHERTEXT = 49_152


def b64(size: int, fill: str = "A") -> str:
    """A base64url string of `size` characters."""
    return fill * size


def payload(ciphertext: str = "c2VjcmV0", **fields: Any) -> vault_pb2.EncryptedPayload:
    return vault_pb2.EncryptedPayload(
        **{"alg": "A256GCM", "nonce": b64(16), "aad": "", "ciphertext": ciphertext, "version": 1, **fields}
    )


def keys(*recipients: str, wrap_alg: str = "ECDH-ES+A256KW") -> list[vault_pb2.WrappedKey]:
    return [vault_pb2.WrappedKey(recipient_id=r, wrap_alg=wrap_alg, wrapped_key=b64(40)) for r in recipients]


def create(vault_id: str, item_id: str, **fields: Any) -> vault_pb2.CreateItemRequest:
    content = {
        "kind": "login",
        "title_hash": "th-1",
        "encrypted_payload": payload(),
        "wrapped_keys": keys("alice", "bob"),
        **fields,
    }
    return vault_pb2.CreateItemRequest(vault_id=vault_id, item_id=item_id, **content)


def update(vault_id: str, item_id: str, base_version: int, **fields: Any) -> vault_pb2.UpdateItemRequest:
    as_create = create(vault_id, item_id, **fields)
    request = vault_pb2.UpdateItemRequest(base_version=base_version)
    request.MergeFromString(as_create.SerializeToString())  # the same field numbers, 1 to 6
    return request


def get(vault_id: str, item_id: str) -> vault_pb2.GetItemRequest:
    return vault_pb2.GetItemRequest(vault_id=vault_id, item_id=item_id)


def listing(vault_id: str, **fields: Any) -> vault_pb2.ListItemsRequest:
    return vault_pb2.ListItemsRequest(vault_id=vault_id, **fields)


PATHS: dict[type[Message], str] = {
    vault_pb2.CreateItemRequest: CREATE,
    vault_pb2.UpdateItemRequest: UPDATE,
    vault_pb2.GetItemRequest: GET,
    vault_pb2.ListItemsRequest: LIST,
    vault_pb2.DeleteItemRequest: DELETE,
}


async def call(client: httpx.AsyncClient, codec: Codec, request: Message, token: str | None) -> httpx.Response:
    return await client.post(PATHS[type(request)], content=codec.encode(request), headers=headers(codec, token))


def error_info(response: httpx.Response) -> dict[str, Any]:
    return detail(error_of(response), "google.rpc.ErrorInfo")


def violated_fields(response: httpx.Response) -> list[str]:
    assert response.status_code == 400, response.text
    error = error_of(response)
    assert error["code"] == "invalid_argument"
    return [v["field"] for v in detail(error, "google.rpc.BadRequest")["fieldViolations"]]


# Success


async def test_create_answers_the_item_at_version_1_and_its_cursor(
    client: httpx.AsyncClient, codec: Codec, world: World, clock: FakeClock
) -> None:
    sequence_before = await world.platform.store.vault_sequence("acme-shared")
    request = create("acme-shared", "new-1")

    response = await call(client, codec, request, world.token("bob"))

    assert response.status_code == 200, response.text
    answer = codec.decode(response.content, vault_pb2.CreateItemResponse)
    item = answer.item
    assert (item.item_id, item.vault_id, item.tenant_id, item.version) == ("new-1", "acme-shared", "acme", 1)
    assert (item.kind, item.title_hash, item.deleted) == ("login", "th-1", False)
    assert item.updated_at.seconds == clock.now
    assert item.encrypted_payload == request.encrypted_payload
    assert list(item.wrapped_keys) == list(request.wrapped_keys)
    assert (answer.cursor.vault_id, answer.cursor.sequence) == ("acme-shared", sequence_before + 1)
    stored = await world.item("acme-shared", "new-1")
    assert stored.version == 1
    assert stored.payload is not None
    assert stored.payload.ciphertext == request.encrypted_payload.ciphertext


async def test_json_create_has_the_contract_shape(client: httpx.AsyncClient, world: World) -> None:
    response = await client.post(
        CREATE,
        json={
            "vaultId": "acme-private",
            "itemId": "json-1",
            "kind": "note",
            "encryptedPayload": {"alg": "XC20P", "nonce": "bm9uY2U", "ciphertext": "Y2lwaGVy"},
            "wrappedKeys": [{"recipientId": "alice", "wrapAlg": "A256KW", "wrappedKey": "a2V5"}],
        },
        headers=headers(JSON, world.token("alice")),
    )

    assert response.status_code == 200, response.text
    assert response.json()["item"] == {
        "itemId": "json-1",
        "tenantId": "acme",
        "vaultId": "acme-private",
        "version": "1",
        "kind": "note",
        "updatedAt": "2027-01-15T08:00:00Z",
        "encryptedPayload": {"alg": "XC20P", "nonce": "bm9uY2U", "ciphertext": "Y2lwaGVy"},
        "wrappedKeys": [{"recipientId": "alice", "wrapAlg": "A256KW", "wrappedKey": "a2V5"}],
    }


async def test_a_sealing_v2_payload_is_stored_and_answered_as_sent(client: httpx.AsyncClient, world: World) -> None:
    payload = {
        "alg": "A256GCM",
        "nonce": "bm9uY2Vub25jZW4",
        "aad": "YWFk",
        "ciphertext": "Y2lwaGVy",
        "version": 2,
        "commitment": "C" * 43,
        "signer": "S" * 43,
        "signature": "s" * 86,
    }
    wrapped = [{"recipientId": "ab" * 32, "wrapAlg": "HPKE-Base-X25519-SHA256-A256GCM", "wrappedKey": "k" * 2048}]
    body = {"vaultId": "acme-private", "itemId": "v2-1", "kind": "note", "encryptedPayload": payload}
    created = await client.post(
        CREATE, json={**body, "wrappedKeys": wrapped}, headers=headers(JSON, world.token("alice"))
    )
    assert created.status_code == 200, created.text
    assert created.json()["item"]["encryptedPayload"] == payload
    assert created.json()["item"]["wrappedKeys"] == wrapped

    read = await client.post(
        GET, json={"vaultId": "acme-private", "itemId": "v2-1"}, headers=headers(JSON, world.token("alice"))
    )
    assert read.json()["item"]["encryptedPayload"] == payload  # through the store, not only the answer


@pytest.mark.parametrize(
    ("field", "value"),
    [("wrapAlg", "HPKE-Base-Unknown"), ("wrapAlg", "hpke-base-x25519-sha256-a256gcm"), ("alg", "A192GCM")],
)
async def test_requests_may_send_only_the_allow_listed_algorithms(
    client: httpx.AsyncClient, world: World, field: str, value: str
) -> None:
    payload = {"alg": "A256GCM", "nonce": "bm9uY2U", "ciphertext": "Y2lwaGVy"}
    key = {"recipientId": "alice", "wrapAlg": "A256KW", "wrappedKey": "a2V5"}
    if field == "alg":
        payload["alg"] = value
    else:
        key["wrapAlg"] = value
    response = await client.post(
        CREATE,
        json={
            "vaultId": "acme-private",
            "itemId": "alg-1",
            "kind": "note",
            "encryptedPayload": payload,
            "wrappedKeys": [key],
        },
        headers=headers(JSON, world.token("alice")),
    )

    assert response.status_code == 400, response.text
    assert response.json()["code"] == "invalid_argument"
    assert await world.platform.store.get_item("acme-private", "alg-1") is None


async def test_update_replaces_the_whole_content_one_version_later(
    client: httpx.AsyncClient, codec: Codec, world: World, clock: FakeClock
) -> None:
    sequence_before = await world.platform.store.vault_sequence("acme-shared")
    clock.advance(60)
    request = update(
        "acme-shared",
        "item-1",
        1,
        kind="card",
        title_hash="",
        encrypted_payload=payload("bmV3"),
        wrapped_keys=keys("bob"),
    )

    response = await call(client, codec, request, world.token("bob"))

    assert response.status_code == 200, response.text
    answer = codec.decode(response.content, vault_pb2.UpdateItemResponse)
    item = answer.item
    assert (item.item_id, item.version, item.kind, item.title_hash) == ("item-1", 2, "card", "")
    assert item.updated_at.seconds == clock.now
    assert item.encrypted_payload.ciphertext == "bmV3"
    assert [k.recipient_id for k in item.wrapped_keys] == ["bob"]
    assert (answer.cursor.vault_id, answer.cursor.sequence) == ("acme-shared", sequence_before + 1)
    assert (await world.item("acme-shared", "item-1")).version == 2


async def test_get_answers_the_item_as_last_changed(client: httpx.AsyncClient, codec: Codec, world: World) -> None:
    await call(client, codec, update("acme-shared", "item-2", 1, title_hash="changed"), world.token("alice"))

    response = await call(client, codec, get("acme-shared", "item-2"), world.token("bob"))

    assert response.status_code == 200, response.text
    item = codec.decode(response.content, vault_pb2.GetItemResponse).item
    assert (item.item_id, item.version, item.title_hash) == ("item-2", 2, "changed")
    assert item.HasField("encrypted_payload")


async def test_get_answers_a_tombstone(client: httpx.AsyncClient, codec: Codec, world: World) -> None:
    delete = vault_pb2.DeleteItemRequest(vault_id="acme-shared", item_id="item-3", base_version=1)
    deleted = await call(client, codec, delete, world.token("alice"))

    response = await call(client, codec, get("acme-shared", "item-3"), world.token("bob"))

    assert response.status_code == 200, response.text
    tombstone = codec.decode(response.content, vault_pb2.GetItemResponse).item
    assert tombstone == codec.decode(deleted.content, vault_pb2.DeleteItemResponse).item
    assert tombstone.deleted
    assert not tombstone.HasField("encrypted_payload")


async def test_list_answers_live_items_by_id_and_the_vaults_cursor(
    client: httpx.AsyncClient, codec: Codec, world: World
) -> None:
    delete = vault_pb2.DeleteItemRequest(vault_id="acme-shared", item_id="item-2", base_version=1)
    await call(client, codec, delete, world.token("alice"))
    sequence = await world.platform.store.vault_sequence("acme-shared")

    response = await call(client, codec, listing("acme-shared"), world.token("bob"))
    with_deleted = await call(client, codec, listing("acme-shared", show_deleted=True), world.token("bob"))

    assert response.status_code == with_deleted.status_code == 200
    answer = codec.decode(response.content, vault_pb2.ListItemsResponse)
    assert [i.item_id for i in answer.items] == ["item-1", "item-3", "item-4", "item-5", "item-6"]
    assert answer.next_page_token == ""
    assert (answer.cursor.vault_id, answer.cursor.sequence) == ("acme-shared", sequence)
    everything = codec.decode(with_deleted.content, vault_pb2.ListItemsResponse)
    assert [(i.item_id, i.deleted) for i in everything.items][:3] == [
        ("item-1", False),
        ("item-2", True),
        ("item-3", False),
    ]


async def test_page_size_0_means_100(client: httpx.AsyncClient, world: World) -> None:
    for number in range(100):
        created = await call(client, JSON, create("acme-private", f"more-{number:03}"), world.token("alice"))
        assert created.status_code == 200, created.text

    first = JSON.decode(
        (await call(client, JSON, listing("acme-private"), world.token("alice"))).content, vault_pb2.ListItemsResponse
    )

    assert len(first.items) == 100
    assert first.next_page_token


async def test_paging_through_a_vault_visits_every_item_once_under_one_cursor(
    client: httpx.AsyncClient, codec: Codec, world: World
) -> None:
    alice = world.token("alice")
    for number in range(7):
        await call(client, codec, create("acme-private", f"extra-{number}"), alice)
    expected = sorted([f"item-{n}" for n in range(1, 7)] + [f"extra-{n}" for n in range(7)])
    first_cursor = await world.platform.store.vault_sequence("acme-private")

    seen: list[str] = []
    cursors: set[tuple[str, int]] = set()
    page_token = ""
    pages = 0
    while True:
        response = await call(client, codec, listing("acme-private", page_size=3, page_token=page_token), alice)
        assert response.status_code == 200, response.text
        page = codec.decode(response.content, vault_pb2.ListItemsResponse)
        seen += [i.item_id for i in page.items]
        cursors.add((page.cursor.vault_id, page.cursor.sequence))
        pages += 1
        if pages == 1:  # a change while the pages are read: it arrives after the cursor, not in it
            changed = await call(client, codec, update("acme-private", "item-6", 1, title_hash="later"), alice)
            assert changed.status_code == 200
        if not (page_token := page.next_page_token):
            break
        assert pages < 10

    assert seen == expected
    assert pages == 5
    assert cursors == {("acme-private", first_cursor)}
    assert await world.platform.store.vault_sequence("acme-private") == first_cursor + 1


# Order of checks: 401, 403 (scope, then membership), then the RPC's own


def every_rpc(vault_id: str, item_id: str) -> list[Message]:
    return [
        create(vault_id, item_id),
        update(vault_id, item_id, 1),
        get(vault_id, item_id),
        listing(vault_id, page_token="garbage"),
    ]


RPC_IDS = ["create", "update", "get", "list"]


@pytest.mark.parametrize("index", range(4), ids=RPC_IDS)
async def test_no_token_is_unauthenticated_before_the_body_is_looked_at(
    client: httpx.AsyncClient, codec: Codec, index: int
) -> None:
    request = every_rpc("acme-shared", "item-1")[index]
    broken = type(request)()  # breaks every field rule

    for sent in (request, broken):
        response = await call(client, codec, sent, None)
        assert response.status_code == 401
        assert error_of(response)["code"] == "unauthenticated"


@pytest.mark.parametrize(
    ("index", "scope", "other_scopes"),
    [
        (0, "vault.items.write", [Scope.VAULT_ITEMS_READ, Scope.VAULT_ITEMS_DELETE]),
        (1, "vault.items.write", [Scope.VAULT_ITEMS_READ, Scope.VAULT_ITEMS_DELETE]),
        (2, "vault.items.read", [Scope.VAULT_ITEMS_WRITE, Scope.VAULT_ITEMS_DELETE]),
        (3, "vault.items.read", [Scope.VAULT_ITEMS_WRITE, Scope.VAULT_ITEMS_DELETE]),
    ],
    ids=RPC_IDS,
)
async def test_a_token_without_the_scope_is_denied_before_membership(
    client: httpx.AsyncClient, world: World, index: int, scope: str, other_scopes: list[Scope]
) -> None:
    bob = await world.platform.store.get_principal("bob")
    assert bob is not None
    narrow = await world.platform.issuer.issue(bob, 600, other_scopes)

    for vault_id in ("acme-shared", "acme-private"):  # a member's vault, and another
        response = await call(client, JSON, every_rpc(vault_id, "item-1")[index], narrow.secret)
        assert response.status_code == 403
        error = error_of(response)
        assert error["code"] == "permission_denied"
        assert scope in error["message"]
        assert brief(error) != NOT_A_MEMBER


@pytest.mark.parametrize("index", range(4), ids=RPC_IDS)
async def test_non_members_other_tenants_and_unknown_vaults_get_one_answer(
    client: httpx.AsyncClient, codec: Codec, world: World, index: int
) -> None:
    answers = []
    for principal, vault_id in (("bob", "acme-private"), ("carol", "acme-shared"), ("bob", "no-such-vault")):
        for item_id in ("item-1", "no-such-item"):
            response = await call(client, codec, every_rpc(vault_id, item_id)[index], world.token(principal))
            answers.append((response.status_code, brief(error_of(response))))

    assert answers == [(403, NOT_A_MEMBER)] * 6
    assert (await world.item("acme-private", "item-1")).version == 1


async def test_create_of_an_existing_item_is_already_exists(
    client: httpx.AsyncClient, codec: Codec, world: World
) -> None:
    response = await call(client, codec, create("acme-shared", "item-1"), world.token("bob"))

    assert response.status_code == 409
    assert error_of(response)["code"] == "already_exists"
    info = error_info(response)
    assert (info["reason"], info["domain"]) == ("ITEM_EXISTS", "zkplatform.dev")
    assert info["metadata"] == {"currentVersion": "1"}


async def test_create_over_a_tombstone_says_deleted(client: httpx.AsyncClient, codec: Codec, world: World) -> None:
    delete = vault_pb2.DeleteItemRequest(vault_id="acme-shared", item_id="item-4", base_version=1)
    await call(client, codec, delete, world.token("bob"))

    response = await call(client, codec, create("acme-shared", "item-4"), world.token("bob"))

    assert error_of(response)["code"] == "already_exists"
    assert error_info(response)["metadata"] == {"currentVersion": "2", "deleted": "true"}


async def test_create_repeated_after_an_update_is_already_exists(client: httpx.AsyncClient, world: World) -> None:
    bob = world.token("bob")
    await call(client, JSON, create("acme-shared", "again"), bob)
    await call(client, JSON, update("acme-shared", "again", 1, title_hash="th-2"), bob)
    await call(client, JSON, update("acme-shared", "again", 2, title_hash="th-1"), bob)  # the created content again

    response = await call(client, JSON, create("acme-shared", "again"), bob)

    assert error_of(response)["code"] == "already_exists"
    assert error_info(response)["metadata"] == {"currentVersion": "3"}


async def test_update_of_an_unknown_item_is_not_found(client: httpx.AsyncClient, codec: Codec, world: World) -> None:
    response = await call(client, codec, update("acme-shared", "no-such-item", 1), world.token("bob"))

    assert response.status_code == 404
    assert error_of(response)["code"] == "not_found"


async def test_update_of_a_tombstone_is_failed_precondition(
    client: httpx.AsyncClient, codec: Codec, world: World
) -> None:
    delete = vault_pb2.DeleteItemRequest(vault_id="acme-shared", item_id="item-5", base_version=1)
    await call(client, codec, delete, world.token("bob"))

    for base_version in (1, 2, 9):
        response = await call(client, codec, update("acme-shared", "item-5", base_version), world.token("bob"))
        assert response.status_code == 400
        assert error_of(response)["code"] == "failed_precondition"
        assert error_info(response)["reason"] == "ITEM_DELETED"
    assert (await world.item("acme-shared", "item-5")).deleted


async def test_update_at_a_stale_version_is_aborted_with_the_current_version(
    client: httpx.AsyncClient, codec: Codec, world: World
) -> None:
    response = await call(client, codec, update("acme-shared", "item-1", 4), world.token("bob"))

    assert response.status_code == 409
    assert error_of(response)["code"] == "aborted"
    info = error_info(response)
    assert info["reason"] == "VERSION_MISMATCH"
    assert info["metadata"] == {"currentVersion": "1"}
    assert (await world.item("acme-shared", "item-1")).version == 1


async def test_get_of_an_unknown_item_is_not_found(client: httpx.AsyncClient, codec: Codec, world: World) -> None:
    response = await call(client, codec, get("acme-shared", "no-such-item"), world.token("bob"))

    assert response.status_code == 404
    assert error_of(response)["code"] == "not_found"


# Repeats and races


async def test_a_repeated_create_answers_the_same(
    client: httpx.AsyncClient, codec: Codec, world: World, clock: FakeClock
) -> None:
    first = await call(client, codec, create("acme-shared", "retried"), world.token("bob"))
    sequence = await world.platform.store.vault_sequence("acme-shared")
    clock.advance(30)

    repeats = [await call(client, codec, create("acme-shared", "retried"), world.token(p)) for p in ("bob", "alice")]

    assert first.status_code == 200
    assert [r.content for r in repeats] == [first.content] * 2
    assert await world.platform.store.vault_sequence("acme-shared") == sequence


@pytest.mark.parametrize(
    "changed",
    [
        {"kind": "note"},
        {"title_hash": "th-2"},
        {"encrypted_payload": payload("b3RoZXI")},
        {"wrapped_keys": keys("bob", "alice")},  # the same keys in another order: not the same content
    ],
)
async def test_a_create_repeated_with_other_content_is_already_exists(
    client: httpx.AsyncClient, world: World, changed: dict[str, Any]
) -> None:
    await call(client, JSON, create("acme-shared", "retried"), world.token("bob"))

    response = await call(client, JSON, create("acme-shared", "retried", **changed), world.token("bob"))

    assert error_of(response)["code"] == "already_exists"
    assert error_info(response)["metadata"] == {"currentVersion": "1"}


async def test_a_repeated_update_answers_the_same(
    client: httpx.AsyncClient, codec: Codec, world: World, clock: FakeClock
) -> None:
    request = update("acme-shared", "item-1", 1, title_hash="th-9")
    first = await call(client, codec, request, world.token("bob"))
    clock.advance(30)

    repeat = await call(client, codec, request, world.token("bob"))
    other = await call(client, codec, update("acme-shared", "item-1", 1, title_hash="th-8"), world.token("bob"))

    assert first.status_code == repeat.status_code == 200
    assert repeat.content == first.content
    assert error_of(other)["code"] == "aborted"
    assert error_info(other)["metadata"] == {"currentVersion": "2"}


# update_mask


def masked(vault_id: str, item_id: str, base_version: int, *paths: str, **fields: Any) -> vault_pb2.UpdateItemRequest:
    """An update of the fields `paths` names, holding only `fields`."""
    request = vault_pb2.UpdateItemRequest(vault_id=vault_id, item_id=item_id, base_version=base_version, **fields)
    request.update_mask.paths.extend(paths)
    return request


async def test_a_mask_of_wrapped_keys_shares_an_item_without_its_ciphertext(
    client: httpx.AsyncClient, codec: Codec, world: World, clock: FakeClock
) -> None:
    before = await world.item("acme-shared", "item-1")
    sequence_before = await world.platform.store.vault_sequence("acme-shared")
    clock.advance(60)
    request = masked("acme-shared", "item-1", 1, "wrapped_keys", wrapped_keys=keys("alice", "bob", "carol"))
    assert not request.HasField("encrypted_payload")

    response = await call(client, codec, request, world.token("bob"))

    assert response.status_code == 200, response.text
    answer = codec.decode(response.content, vault_pb2.UpdateItemResponse)
    assert (answer.item.version, answer.item.updated_at.seconds) == (2, clock.now)
    assert list(answer.item.wrapped_keys) == list(request.wrapped_keys)
    assert answer.cursor.sequence == sequence_before + 1
    stored = await world.item("acme-shared", "item-1")
    assert (stored.kind, stored.title_hash, stored.payload) == (before.kind, before.title_hash, before.payload)
    assert [k.recipient_id for k in stored.wrapped_keys] == ["alice", "bob", "carol"]
    assert before.payload is not None
    assert answer.item.encrypted_payload.ciphertext == before.payload.ciphertext


async def test_a_json_mask_names_fields_in_lower_camel_case(client: httpx.AsyncClient, world: World) -> None:
    before = await world.item("acme-shared", "item-1")
    body = {
        "vaultId": "acme-shared",
        "itemId": "item-1",
        "baseVersion": "1",
        "updateMask": "titleHash,wrappedKeys",
        "kind": "ignored",  # not in the mask: left as stored
        "titleHash": "dGl0bGU",
        "wrappedKeys": [{"recipientId": "alice", "wrapAlg": "A256KW", "wrappedKey": "a2V5"}],
    }

    response = await client.post(UPDATE, json=body, headers=headers(JSON, world.token("bob")))

    assert response.status_code == 200, response.text
    item = response.json()["item"]
    assert (item["version"], item["kind"], item["titleHash"]) == ("2", before.kind, "dGl0bGU")
    assert item["wrappedKeys"] == body["wrappedKeys"]
    assert before.payload is not None
    assert item["encryptedPayload"]["ciphertext"] == before.payload.ciphertext


async def test_a_masked_update_needs_only_the_fields_it_names(
    client: httpx.AsyncClient, codec: Codec, world: World
) -> None:
    no_keys = masked("acme-shared", "item-1", 1, "wrapped_keys", "kind", kind="card")
    response = await call(client, codec, no_keys, world.token("bob"))
    assert violated_fields(response) == ["wrappedKeys"]

    response = await call(client, codec, masked("acme-shared", "item-1", 1, "kind", kind="card"), world.token("bob"))
    assert response.status_code == 200, response.text
    assert codec.decode(response.content, vault_pb2.UpdateItemResponse).item.kind == "card"


@pytest.mark.parametrize(
    "paths",
    [
        ["version"],  # output only
        ["deleted"],
        ["item_id"],
        ["payload"],
        ["encrypted_payload.ciphertext"],
        ["wrappedKeys"],  # the JSON name, where the proto name belongs
        [""],
        ["wrapped_keys", "kind", "wrapped_keys"],  # twice
    ],
)
async def test_a_mask_naming_anything_else_is_refused_naming_update_mask(
    client: httpx.AsyncClient, world: World, paths: list[str]
) -> None:
    request = update("acme-shared", "item-1", 1)
    request.update_mask.paths.extend(paths)

    response = await call(client, PROTO, request, world.token("bob"))

    assert violated_fields(response) == ["updateMask"]
    assert (await world.item("acme-shared", "item-1")).version == 1


@pytest.mark.parametrize("mask", ["version", "wrapped_keys", "encryptedPayload.ciphertext", "kind,kind", 7])
async def test_a_json_mask_naming_anything_else_is_refused_naming_update_mask(
    client: httpx.AsyncClient, world: World, mask: object
) -> None:
    body = {**json_format.MessageToDict(update("acme-shared", "item-1", 1)), "updateMask": mask}

    response = await client.post(UPDATE, json=body, headers=headers(JSON, world.token("bob")))

    assert violated_fields(response) == ["updateMask"]
    assert (await world.item("acme-shared", "item-1")).version == 1


async def test_a_repeated_masked_update_answers_the_same(
    client: httpx.AsyncClient, codec: Codec, world: World, clock: FakeClock
) -> None:
    request = masked("acme-shared", "item-1", 1, "wrapped_keys", wrapped_keys=keys("carol"))
    first = await call(client, codec, request, world.token("bob"))
    clock.advance(30)

    repeat = await call(client, codec, request, world.token("bob"))
    other = masked("acme-shared", "item-1", 1, "wrapped_keys", wrapped_keys=keys("dave"))
    refused = await call(client, codec, other, world.token("bob"))

    assert first.status_code == repeat.status_code == 200
    assert repeat.content == first.content
    assert error_info(refused)["metadata"] == {"currentVersion": "2"}


async def test_concurrent_updates_at_one_version_make_exactly_one_change(
    client: httpx.AsyncClient, world: World
) -> None:
    sequence = await world.platform.store.vault_sequence("acme-shared")
    requests = [update("acme-shared", "item-6", 1, title_hash=f"writer-{n}") for n in range(20)]

    responses = await asyncio.gather(*(call(client, JSON, r, world.token("bob")) for r in requests))

    winners = [r for r in responses if r.status_code == 200]
    assert len(winners) == 1
    losers = [r for r in responses if r.status_code != 200]
    assert {r.status_code for r in losers} == {409}
    assert all(error_of(r)["code"] == "aborted" for r in losers)
    assert all(error_info(r)["metadata"] == {"currentVersion": "2"} for r in losers)
    stored = await world.item("acme-shared", "item-6")
    assert stored.title_hash == winners[0].json()["item"]["titleHash"]
    assert await world.platform.store.vault_sequence("acme-shared") == sequence + 1


async def test_concurrent_identical_updates_all_answer_the_one_change(
    client: httpx.AsyncClient, codec: Codec, world: World
) -> None:
    sequence = await world.platform.store.vault_sequence("acme-shared")
    request = update("acme-shared", "item-6", 1, title_hash="same")

    responses = await asyncio.gather(*(call(client, codec, request, world.token("bob")) for _ in range(20)))

    assert {r.status_code for r in responses} == {200}
    assert len({r.content for r in responses}) == 1
    assert await world.platform.store.vault_sequence("acme-shared") == sequence + 1


async def test_concurrent_creates_of_one_id_make_one_item(client: httpx.AsyncClient, world: World) -> None:
    same = [create("acme-shared", "raced") for _ in range(10)]
    other = [create("acme-shared", "raced", title_hash=f"other-{n}") for n in range(10)]
    sequence = await world.platform.store.vault_sequence("acme-shared")

    responses = await asyncio.gather(*(call(client, JSON, r, world.token("bob")) for r in same + other))

    created = {r.content for r in responses if r.status_code == 200}
    assert len(created) == 1
    refused = [r for r in responses if r.status_code != 200]
    assert all(error_of(r)["code"] == "already_exists" for r in refused)
    assert len(refused) in (10, 19)  # the identical ones share the win, or one of the others won
    assert await world.platform.store.vault_sequence("acme-shared") == sequence + 1


# Bad input: INVALID_ARGUMENT naming each field, nothing stored


BAD_CONTENT = [
    pytest.param({"encrypted_payload": payload(b64(MAX_CIPHERTEXT + 1))}, ["encryptedPayload.ciphertext"], id="long"),
    pytest.param({"encrypted_payload": payload("not base64!")}, ["encryptedPayload.ciphertext"], id="ciphertext"),
    pytest.param({"encrypted_payload": payload(alg="RSA1_5")}, ["encryptedPayload"], id="alg"),
    # The allow-lists bind requests only (vault.proto): rules of the request's fields, named so.
    pytest.param({"encrypted_payload": payload(alg="")}, ["encryptedPayload"], id="no-alg"),
    pytest.param({"encrypted_payload": payload(nonce="")}, ["encryptedPayload.nonce"], id="no-nonce"),
    pytest.param({"encrypted_payload": payload(aad=b64(1025))}, ["encryptedPayload.aad"], id="long-aad"),
    pytest.param({"encrypted_payload": None}, ["encryptedPayload"], id="no-payload"),
    pytest.param({"wrapped_keys": []}, ["wrappedKeys"], id="no-keys"),
    pytest.param({"wrapped_keys": keys(*(f"r{n}" for n in range(257)))}, ["wrappedKeys"], id="257-keys"),
    pytest.param({"wrapped_keys": keys("bob", wrap_alg="dir")}, ["wrappedKeys"], id="wrap-alg"),
    pytest.param({"wrapped_keys": keys("-bob")}, ["wrappedKeys[0].recipientId"], id="recipient"),
    pytest.param({"kind": "Login"}, ["kind"], id="kind"),
    pytest.param({"kind": ""}, ["kind"], id="no-kind"),
    pytest.param({"title_hash": "t" * 129}, ["titleHash"], id="title-hash"),
    pytest.param({"title_hash": "dGl0bGU="}, ["titleHash"], id="title-hash-padded"),
    pytest.param({"title_hash": "a+b/c"}, ["titleHash"], id="title-hash-base64"),
    pytest.param({"title_hash": "title hash"}, ["titleHash"], id="title-hash-text"),
]


@pytest.mark.parametrize(("content", "fields"), BAD_CONTENT)
async def test_bad_content_is_refused_naming_the_field_and_nothing_is_stored(
    client: httpx.AsyncClient, codec: Codec, world: World, content: dict[str, Any], fields: list[str]
) -> None:
    sequence = await world.platform.store.vault_sequence("acme-shared")
    for request in (create("acme-shared", "bad-1", **content), update("acme-shared", "item-1", 1, **content)):
        response = await call(client, codec, request, world.token("bob"))
        assert violated_fields(response) == fields

    assert await world.platform.store.get_item("acme-shared", "bad-1") is None
    assert (await world.item("acme-shared", "item-1")).version == 1
    assert await world.platform.store.vault_sequence("acme-shared") == sequence


async def test_the_largest_ciphertext_is_stored(client: httpx.AsyncClient, codec: Codec, world: World) -> None:
    response = await call(
        client, codec, create("acme-shared", "big", encrypted_payload=payload(b64(MAX_CIPHERTEXT))), world.token("bob")
    )

    assert response.status_code == 200, response.text
    item = await world.item("acme-shared", "big")
    assert item.payload is not None
    assert len(item.payload.ciphertext) == MAX_CIPHERTEXT


async def test_256_wrapped_keys_are_stored(client: httpx.AsyncClient, world: World) -> None:
    response = await call(
        client,
        JSON,
        create("acme-shared", "many", wrapped_keys=keys(*(f"r{n}" for n in range(256)))),
        world.token("bob"),
    )

    assert response.status_code == 200, response.text
    assert len((await world.item("acme-shared", "many")).wrapped_keys) == 256


async def test_a_recipient_twice_is_refused_and_nothing_is_stored(
    client: httpx.AsyncClient, codec: Codec, world: World
) -> None:
    twice = keys("bob", "alice", "bob")

    for request in (
        create("acme-shared", "bad-1", wrapped_keys=twice),
        update("acme-shared", "item-1", 1, wrapped_keys=twice),
    ):
        response = await call(client, codec, request, world.token("bob"))
        assert response.status_code == 400
        violations = detail(error_of(response), "google.rpc.BadRequest")["fieldViolations"]
        assert violations == [
            {"field": "wrappedKeys", "description": "each recipient may have at most one wrapped key"}
        ]

    assert await world.platform.store.get_item("acme-shared", "bad-1") is None
    assert (await world.item("acme-shared", "item-1")).version == 1


async def test_a_request_over_64_kib_is_resource_exhausted_after_the_token(
    client: httpx.AsyncClient, codec: Codec, world: World
) -> None:
    """Every field within its own limit, the whole over the body limit."""
    heavy = [vault_pb2.WrappedKey(recipient_id=f"r{n}", wrap_alg="A256KW", wrapped_key=b64(1024)) for n in range(60)]
    request = create("acme-shared", "huge", encrypted_payload=payload(b64(MAX_CIPHERTEXT)), wrapped_keys=heavy)
    assert len(codec.encode(request)) > 65_536

    response = await call(client, codec, request, world.token("bob"))
    assert response.status_code == 429
    assert error_of(response)["code"] == "resource_exhausted"
    assert (await call(client, codec, request, None)).status_code == 401  # the body is read after the token
    assert await world.platform.store.get_item("acme-shared", "huge") is None


async def test_a_negative_page_size_names_page_size(client: httpx.AsyncClient, codec: Codec, world: World) -> None:
    response = await call(client, codec, listing("acme-shared", page_size=-1), world.token("bob"))

    assert violated_fields(response) == ["pageSize"]


@pytest.mark.parametrize("page_size", [1000, 1001, 2**31 - 1])
async def test_a_page_size_of_1000_or_more_is_accepted(client: httpx.AsyncClient, world: World, page_size: int) -> None:
    """AIP-158: above the maximum, the maximum (tests/rpc/test_page_sizes.py counts the page)."""
    response = await call(client, JSON, listing("acme-shared", page_size=page_size), world.token("bob"))

    assert response.status_code == 200, response.text


async def first_page_token(client: httpx.AsyncClient, token: str, vault_id: str, **fields: Any) -> str:
    response = await call(client, JSON, listing(vault_id, page_size=2, **fields), token)
    assert response.status_code == 200, response.text
    page_token = JSON.decode(response.content, vault_pb2.ListItemsResponse).next_page_token
    assert page_token
    return page_token


def tampered(page_token: str) -> str:
    raw = bytearray(base64.urlsafe_b64decode(page_token + "=" * (-len(page_token) % 4)))
    raw[len(raw) // 2] ^= 1
    return base64.urlsafe_b64encode(bytes(raw)).rstrip(b"=").decode()


async def test_page_tokens_of_other_listings_or_altered_or_made_up_name_page_token(
    client: httpx.AsyncClient, codec: Codec, world: World
) -> None:
    alice = world.token("alice")
    own = await first_page_token(client, alice, "acme-shared")
    refused = {
        "tampered": tampered(own),
        "truncated": own[:-2],
        "another vault": await first_page_token(client, alice, "acme-private"),
        "another filter": await first_page_token(client, alice, "acme-shared", show_deleted=True),
        "another tenant": await first_page_token(client, world.token("carol"), "globex-main"),
        "garbage": "garbage",
        "not base64": "!!!!",
        "too long": "A" * 1025,
    }

    answers = {
        name: await call(client, codec, listing("acme-shared", page_size=2, page_token=t), alice)
        for name, t in refused.items()
    }
    accepted = await call(client, codec, listing("acme-shared", page_size=2, page_token=own), alice)

    assert {name: violated_fields(r) for name, r in answers.items()} == {name: ["pageToken"] for name in refused}
    assert accepted.status_code == 200


async def test_a_bad_page_token_is_checked_after_membership(client: httpx.AsyncClient, world: World) -> None:
    response = await call(client, JSON, listing("acme-private", page_token="garbage"), world.token("bob"))

    assert brief(error_of(response)) == NOT_A_MEMBER


# Cache-Control


@pytest.mark.parametrize(
    "request_message",
    [
        create("acme-shared", "cached"),
        update("acme-shared", "item-1", 1),
        get("acme-shared", "item-1"),
        listing("acme-shared"),
        vault_pb2.DeleteItemRequest(vault_id="acme-shared", item_id="item-2", base_version=1),
        get("acme-shared", "no-such-item"),  # a 404 is cacheable by default
    ],
    ids=["create", "update", "get", "list", "delete", "not-found"],
)
async def test_every_vault_answer_is_no_store(
    client: httpx.AsyncClient, codec: Codec, world: World, request_message: Message
) -> None:
    response = await call(client, codec, request_message, world.token("bob"))

    assert response.status_code in (200, 404)
    assert response.headers["cache-control"] == "no-store"
