"""Through the whole app in-process, both codecs: every cursor carries the store's epoch;
since_epoch of another epoch, and a ListItems page token of before a rotation, answer
failed_precondition CURSOR_EXPIRED with metadata `epoch`; a tombstone carries its purge_time
in every answer that carries an item; a page of large items stops at 3 MiB of binary
encoding, and paging to the end returns every item once."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from google.protobuf.message import Message

from tests.actors import OPERATOR
from tests.big_items import COUNT, ID_FORMAT, big_content
from tests.connect import JSON, PROTO, Codec, Sending, detail, error_of, headers
from tests.rpc.test_changes import VAULT, enveloped, error_info, stream_headers, until, watch_outcome
from tests.world import BASE_URL, PEPPER, FakeClock, World
from zkplatform.app import Server, create_app
from zkplatform.config import Settings
from zkplatform.domain.paging import PAGE_BYTES
from zkplatform.domain.sync import WatchPolicy
from zkplatform.store.memory import MemoryStore
from zkplatform.wiring import Platform
from zkplatform_api.platform.v1 import vault_pb2

SERVICE = "/platform.v1.VaultService"
SEEDED = 6
RETENTION_DAYS = 30


@pytest.fixture
def platform(clock: FakeClock) -> Platform:
    return Platform.build(MemoryStore(), PEPPER, clock, watch_policy=WatchPolicy(heartbeat_seconds=0.05))


@pytest.fixture
def app(platform: Platform) -> Server:
    return create_app(Settings(tombstone_retention_days=RETENTION_DAYS), platform=platform)


@pytest.fixture
def sending(app: Server) -> Sending:
    return Sending(app)


@pytest.fixture
async def client(sending: Sending, world: World) -> Any:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=sending), base_url=BASE_URL) as client:
        yield client


async def call(client: httpx.AsyncClient, codec: Codec, token: str, request: Message) -> httpx.Response:
    method = type(request).__name__.removesuffix("Request")
    return await client.post(f"{SERVICE}/{method}", content=codec.encode(request), headers=headers(codec, token))


async def answer(client: httpx.AsyncClient, codec: Codec, token: str, request: Message, kind: type[Any]) -> Any:
    response = await call(client, codec, token, request)
    assert response.status_code == 200, response.text
    return codec.decode(response.content, kind)


async def watched(
    client: httpx.AsyncClient, codec: Codec, token: str, timeout_ms: int | None = None, **fields: Any
) -> httpx.Response:
    request = vault_pb2.WatchChangesRequest(vault_id=VAULT, **fields)
    deadline = {} if timeout_ms is None else {"Connect-Timeout-Ms": str(timeout_ms)}
    return await client.post(
        f"{SERVICE}/WatchChanges", content=enveloped(codec, request), headers=stream_headers(codec, token) | deadline
    )


def expired_with(response: httpx.Response, epoch: str) -> None:
    assert (response.status_code, error_of(response)["code"]) == (400, "failed_precondition")
    info = error_info(response)
    assert (info["reason"], info["metadata"]) == ("CURSOR_EXPIRED", {"epoch": epoch})


# Epochs


async def test_every_cursor_carries_the_epoch(client: httpx.AsyncClient, codec: Codec, world: World) -> None:
    bob = world.token("bob")
    epoch = await world.platform.store.epoch()
    payload = vault_pb2.EncryptedPayload(alg="A256GCM", nonce="bm9uY2U", ciphertext="Y2lwaGVy")
    keys = [vault_pb2.WrappedKey(recipient_id="bob", wrap_alg="A256KW", wrapped_key="a2V5")]
    create = vault_pb2.CreateItemRequest(
        vault_id=VAULT, item_id="n1", kind="note", encrypted_payload=payload, wrapped_keys=keys
    )
    update = vault_pb2.UpdateItemRequest(
        vault_id=VAULT, item_id="n1", kind="note", encrypted_payload=payload, wrapped_keys=keys, base_version=1
    )

    answers = [
        await answer(client, codec, bob, create, vault_pb2.CreateItemResponse),
        await answer(client, codec, bob, update, vault_pb2.UpdateItemResponse),
        await answer(
            client, codec, bob, vault_pb2.DeleteItemRequest(vault_id=VAULT, item_id="n1", base_version=2),
            vault_pb2.DeleteItemResponse,
        ),
        await answer(client, codec, bob, vault_pb2.ListItemsRequest(vault_id=VAULT), vault_pb2.ListItemsResponse),
        await answer(client, codec, bob, vault_pb2.ListChangesRequest(vault_id=VAULT), vault_pb2.ListChangesResponse),
    ]  # fmt: skip

    assert [(a.cursor.vault_id, a.cursor.epoch) for a in answers] == [(VAULT, epoch)] * 5
    assert [a.cursor.sequence for a in answers] == [SEEDED + 1, SEEDED + 2, SEEDED + 3, SEEDED + 3, SEEDED + 3]


async def test_a_cursor_of_another_epoch_is_expired(client: httpx.AsyncClient, codec: Codec, world: World) -> None:
    bob = world.token("bob")
    old = await world.platform.store.epoch()
    new = await world.platform.store.rotate_epoch(OPERATOR)

    stale = await call(
        client, codec, bob, vault_pb2.ListChangesRequest(vault_id=VAULT, since_sequence=2, since_epoch=old)
    )
    current = await answer(
        client,
        codec,
        bob,
        vault_pb2.ListChangesRequest(vault_id=VAULT, since_sequence=2, since_epoch=new),
        vault_pb2.ListChangesResponse,
    )
    blind = await answer(
        client, codec, bob, vault_pb2.ListChangesRequest(vault_id=VAULT, since_sequence=2),
        vault_pb2.ListChangesResponse,
    )  # fmt: skip

    expired_with(stale, new)
    assert current == blind  # a client that sends no epoch is answered as before
    assert (current.cursor.sequence, current.cursor.epoch) == (SEEDED, new)


async def test_a_watch_from_a_cursor_of_another_epoch_ends_at_once(
    client: httpx.AsyncClient, codec: Codec, world: World
) -> None:
    old = await world.platform.store.epoch()
    new = await world.platform.store.rotate_epoch(OPERATOR)

    response = await asyncio.wait_for(watched(client, codec, world.token("bob"), since_sequence=4, since_epoch=old), 10)

    messages, ending = watch_outcome(codec, response.content)
    assert messages == []
    assert ending["error"]["code"] == "failed_precondition"
    info = next(d for d in ending["error"]["details"] if d["type"] == "google.rpc.ErrorInfo")
    assert (info["debug"]["reason"], info["debug"]["metadata"]) == ("CURSOR_EXPIRED", {"epoch": new})


async def test_a_watch_of_the_current_epoch_carries_it(
    client: httpx.AsyncClient, sending: Sending, codec: Codec, world: World
) -> None:
    epoch = await world.platform.store.epoch()
    watching = asyncio.ensure_future(watched(client, codec, world.token("bob"), since_sequence=4, since_epoch=epoch))
    await until(lambda: sending.sent("WatchChanges") >= 2)  # the backlog, then a heartbeat
    await world.platform.store.rotate_epoch(OPERATOR)  # ends it within a heartbeat period

    messages, ending = watch_outcome(codec, (await asyncio.wait_for(watching, 10)).content)

    assert [m.cursor.epoch for m in messages] == [epoch] * len(messages)
    assert [c.item.item_id for c in messages[0].changes] == ["item-5", "item-6"]
    assert ending["error"]["code"] == "failed_precondition"


async def test_a_page_token_of_before_a_rotation_is_expired(
    client: httpx.AsyncClient, codec: Codec, world: World
) -> None:
    bob = world.token("bob")
    first = await answer(
        client, codec, bob, vault_pb2.ListItemsRequest(vault_id=VAULT, page_size=2), vault_pb2.ListItemsResponse
    )
    new = await world.platform.store.rotate_epoch(OPERATOR)

    refused = await call(
        client, codec, bob, vault_pb2.ListItemsRequest(vault_id=VAULT, page_size=2, page_token=first.next_page_token)
    )

    expired_with(refused, new)


@pytest.mark.parametrize("epoch", ["not base64url!", "e" * 65])
async def test_since_epoch_is_base64url_of_at_most_64_characters(
    client: httpx.AsyncClient, world: World, epoch: str
) -> None:
    refused = await call(
        client, JSON, world.token("bob"), vault_pb2.ListChangesRequest(vault_id=VAULT, since_epoch=epoch)
    )

    assert (refused.status_code, error_of(refused)["code"]) == (400, "invalid_argument")
    violations = detail(error_of(refused), "google.rpc.BadRequest")["fieldViolations"]
    assert [v["field"] for v in violations] == ["sinceEpoch"]


# purge_time


async def test_a_tombstone_carries_its_purge_time_in_every_answer(
    client: httpx.AsyncClient, app: Server, sending: Sending, codec: Codec, world: World, clock: FakeClock
) -> None:
    bob = world.token("bob")
    clock.advance(45)
    watching = asyncio.ensure_future(watched(client, codec, bob, since_sequence=SEEDED))
    await until(lambda: world.platform.sync.slots.total == 1)

    deleted = await answer(
        client,
        codec,
        bob,
        vault_pb2.DeleteItemRequest(vault_id=VAULT, item_id="item-2", base_version=1),
        vault_pb2.DeleteItemResponse,
    )
    got = await answer(
        client, codec, bob, vault_pb2.GetItemRequest(vault_id=VAULT, item_id="item-2"), vault_pb2.GetItemResponse
    )
    listed = await answer(
        client, codec, bob, vault_pb2.ListItemsRequest(vault_id=VAULT, show_deleted=True), vault_pb2.ListItemsResponse
    )
    changed = await answer(
        client, codec, bob, vault_pb2.ListChangesRequest(vault_id=VAULT, since_sequence=SEEDED),
        vault_pb2.ListChangesResponse,
    )  # fmt: skip
    # Ended once it sent the delete: the in-process transport then hands its messages over.
    await until(lambda: sending.sent("WatchChanges", b"item-2") >= 1)
    app.end_streams()
    messages, _ = watch_outcome(codec, (await asyncio.wait_for(watching, 10)).content)
    watched_changes = [change for message in messages for change in message.changes]  # between heartbeats

    tombstones = [deleted.item, got.item, listed.items[1], changed.changes[0].item, watched_changes[0].item]
    purge_time = clock.now + RETENTION_DAYS * 86_400  # the setting's retention after the delete
    assert [(t.item_id, t.deleted, t.purge_time.seconds) for t in tombstones] == [("item-2", True, purge_time)] * 5
    assert not any(item.HasField("purge_time") for item in listed.items if not item.deleted)
    if codec is JSON:
        body = (await call(client, JSON, bob, vault_pb2.GetItemRequest(vault_id=VAULT, item_id="item-2"))).json()
        assert body["item"]["purgeTime"] == "2027-02-14T08:00:45Z"  # as updatedAt: whole seconds, UTC


# Pages bounded in bytes


@pytest.fixture
async def big(world: World, clock: FakeClock) -> World:
    items = [big_content(n).new_item(ID_FORMAT.format(n), "acme", VAULT, clock.now) for n in range(COUNT)]
    await world.platform.store.add_items(items, OPERATOR)
    return world


async def test_a_default_page_of_large_items_stays_within_3_mib(client: httpx.AsyncClient, big: World) -> None:
    bob = big.token("bob")
    sizes: list[int] = []
    listed: list[str] = []
    token = ""
    while True:
        response = await call(client, PROTO, bob, vault_pb2.ListItemsRequest(vault_id=VAULT, page_token=token))
        assert response.status_code == 200, response.text
        page = PROTO.decode(response.content, vault_pb2.ListItemsResponse)
        sizes.append(len(response.content))
        listed.extend(item.item_id for item in page.items)
        if not (token := page.next_page_token):
            break

    assert max(sizes) <= PAGE_BYTES
    assert len(sizes) >= 2  # about 50 items of 62 KB a page, where 100 would be 6.2 MB
    assert listed == [ID_FORMAT.format(n) for n in range(COUNT)] + [f"item-{n}" for n in range(1, 7)]


async def test_the_same_page_in_json_is_larger_and_whole(client: httpx.AsyncClient, big: World) -> None:
    """The bound is the binary encoding's: a JSON answer of the same page is larger (here by
    little: base64url text is the same in both), and complete."""
    request = vault_pb2.ListItemsRequest(vault_id=VAULT)
    binary = await call(client, PROTO, big.token("bob"), request)
    json = await call(client, JSON, big.token("bob"), request)

    assert len(binary.content) <= PAGE_BYTES
    assert len(json.content) > len(binary.content)
    assert JSON.decode(json.content, vault_pb2.ListItemsResponse) == PROTO.decode(
        binary.content, vault_pb2.ListItemsResponse
    )


async def test_changes_of_large_items_stay_within_3_mib(client: httpx.AsyncClient, big: World) -> None:
    bob = big.token("bob")
    cursor, epoch = 0, ""
    seen: list[int] = []
    sizes: list[int] = []
    while True:
        request = vault_pb2.ListChangesRequest(vault_id=VAULT, since_sequence=cursor, since_epoch=epoch)
        response = await call(client, PROTO, bob, request)
        page = PROTO.decode(response.content, vault_pb2.ListChangesResponse)
        sizes.append(len(response.content))
        seen.extend(c.sequence for c in page.changes)
        cursor, epoch = page.cursor.sequence, page.cursor.epoch
        if not page.has_more:
            break

    assert max(sizes) <= PAGE_BYTES
    assert len(sizes) >= 2
    assert seen == list(range(1, SEEDED + COUNT + 1))
