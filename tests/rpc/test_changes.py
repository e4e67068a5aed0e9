"""VaultService.ListChanges and WatchChanges through the whole app in-process: paging and
has_more, the cursor's errors (CURSOR_EXPIRED after a purge, CURSOR_AHEAD), the order of
checks, the GET form and Cache-Control; a watch over Connect streaming from its backlog
to its end (a revoked token, the server shutting down), authenticated like every call."""

from __future__ import annotations

import asyncio
import base64
import json
import struct
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from google.protobuf import json_format
from google.rpc import error_details_pb2

from tests.actors import OPERATOR
from tests.connect import JSON, PROTO, Codec, Sending, brief, detail, error_of, headers
from tests.world import BASE_URL, PEPPER, FakeClock, World
from zkplatform.app import Server, create_app
from zkplatform.config import Settings
from zkplatform.domain.auth import Presented
from zkplatform.domain.dpop import ProofRequest
from zkplatform.domain.models import Scope
from zkplatform.domain.sync import WatchPolicy
from zkplatform.store.memory import MemoryStore
from zkplatform.wiring import Platform
from zkplatform_api.platform.v1 import vault_pb2

SERVICE = "/platform.v1.VaultService"
LIST = f"{SERVICE}/ListChanges"
WATCH = f"{SERVICE}/WatchChanges"
VAULT = "acme-shared"
SEEDED = 6
STEP = 10.0  # seconds: bounds a wait for what must happen at once


@pytest.fixture
def platform(clock: FakeClock) -> Platform:
    return Platform.build(MemoryStore(), PEPPER, clock, watch_policy=WatchPolicy(heartbeat_seconds=0.05))


@pytest.fixture
def app(platform: Platform) -> Server:
    return create_app(Settings(), platform=platform)


@pytest.fixture
def sending(app: Server) -> Sending:
    return Sending(app)


@pytest.fixture
async def client(sending: Sending, world: World) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=sending), base_url=BASE_URL) as client:
        yield client


async def list_changes(client: httpx.AsyncClient, codec: Codec, token: str | None, **fields: Any) -> httpx.Response:
    request = vault_pb2.ListChangesRequest(vault_id=fields.pop("vault_id", VAULT), **fields)
    return await client.post(LIST, content=codec.encode(request), headers=headers(codec, token))


def changes_of(codec: Codec, response: httpx.Response) -> vault_pb2.ListChangesResponse:
    assert response.status_code == 200, response.text
    return codec.decode(response.content, vault_pb2.ListChangesResponse)


def ids(changes: Any) -> list[tuple[str, int]]:
    return [(c.item.item_id, c.sequence) for c in changes]


def error_info(response: httpx.Response) -> dict[str, Any]:
    return detail(error_of(response), "google.rpc.ErrorInfo")


# ListChanges


async def test_changes_come_in_pages_with_their_cursor_and_has_more(
    client: httpx.AsyncClient, codec: Codec, world: World
) -> None:
    token = world.token("bob")

    first = changes_of(codec, await list_changes(client, codec, token, page_size=4))
    rest = changes_of(codec, await list_changes(client, codec, token, since_sequence=first.cursor.sequence))

    assert (ids(first.changes), first.has_more) == ([(f"item-{n}", n) for n in range(1, 5)], True)
    assert (first.cursor.vault_id, first.cursor.sequence) == (VAULT, 4)
    assert (ids(rest.changes), rest.cursor.sequence, rest.has_more) == ([("item-5", 5), ("item-6", 6)], 6, False)


async def test_a_caught_up_client_gets_no_changes_and_its_own_cursor(client: httpx.AsyncClient, world: World) -> None:
    answer = changes_of(JSON, await list_changes(client, JSON, world.token("bob"), since_sequence=SEEDED))
    assert (list(answer.changes), answer.cursor.sequence, answer.has_more) == ([], SEEDED, False)


async def test_a_delete_reaches_the_client_as_a_tombstone(client: httpx.AsyncClient, world: World) -> None:
    bob = world.token("bob")
    deleted = vault_pb2.DeleteItemRequest(vault_id=VAULT, item_id="item-2", base_version=1)
    await client.post(f"{SERVICE}/DeleteItem", content=JSON.encode(deleted), headers=headers(JSON, bob))

    answer = changes_of(JSON, await list_changes(client, JSON, bob, since_sequence=SEEDED))

    assert ids(answer.changes) == [("item-2", 7)]
    tombstone = answer.changes[0].item
    assert (tombstone.deleted, tombstone.version, tombstone.HasField("encrypted_payload")) == (True, 2, False)


async def test_the_answer_is_never_cached_and_the_get_form_serves_it(client: httpx.AsyncClient, world: World) -> None:
    posted = await list_changes(client, JSON, world.token("bob"))
    message = json_format.MessageToJson(vault_pb2.ListChangesRequest(vault_id=VAULT, since_sequence=4))
    got = await client.get(
        LIST,
        params={"connect": "v1", "encoding": "json", "message": message},
        headers={"Authorization": f"Bearer {world.token('bob')}"},
    )
    refused = await list_changes(client, JSON, world.token("bob"), since_sequence=99)

    assert [r.headers.get("cache-control") for r in (posted, got, refused)] == ["no-store"] * 3
    assert ids(changes_of(JSON, got).changes) == [("item-5", 5), ("item-6", 6)]


async def test_a_cursor_below_the_purge_horizon_is_expired_with_the_lowest_accepted(
    client: httpx.AsyncClient, world: World, clock: FakeClock
) -> None:
    bob = world.token("bob")
    deleted = vault_pb2.DeleteItemRequest(vault_id=VAULT, item_id="item-3", base_version=1)
    await client.post(f"{SERVICE}/DeleteItem", content=JSON.encode(deleted), headers=headers(JSON, bob))
    clock.advance(10)
    await world.platform.store.purge_tombstones(clock.now, OPERATOR)

    expired = await list_changes(client, JSON, bob, since_sequence=SEEDED)
    accepted = await list_changes(client, JSON, bob, since_sequence=SEEDED + 1)
    from_the_start = await list_changes(client, JSON, bob, since_sequence=0)

    epoch = await world.platform.store.epoch()
    assert (expired.status_code, error_of(expired)["code"]) == (400, "failed_precondition")
    assert error_info(expired) == {
        "reason": "CURSOR_EXPIRED",
        "domain": "zkplatform.dev",
        "metadata": {"minSequence": "7", "epoch": epoch},
    }
    assert changes_of(JSON, accepted).cursor.sequence == SEEDED + 1
    # 0 is everything that exists, whatever was purged: the items but the purged one.
    everything = changes_of(JSON, from_the_start)
    assert [c.item.item_id for c in everything.changes] == [f"item-{n}" for n in (1, 2, 4, 5, 6)]
    assert (everything.cursor.sequence, everything.cursor.epoch, everything.has_more) == (SEEDED, epoch, False)


async def test_a_cursor_beyond_the_vault_is_out_of_range_with_the_current_sequence(
    client: httpx.AsyncClient, world: World
) -> None:
    ahead = await list_changes(client, JSON, world.token("bob"), since_sequence=SEEDED + 1)

    assert (ahead.status_code, error_of(ahead)["code"]) == (400, "out_of_range")
    assert error_info(ahead)["reason"] == "CURSOR_AHEAD"
    assert error_info(ahead)["metadata"] == {"currentSequence": str(SEEDED)}


async def test_the_token_then_the_scope_then_the_membership_then_the_cursor(
    client: httpx.AsyncClient, world: World
) -> None:
    bad = {"since_sequence": 10**9}
    principal = await world.platform.store.get_principal("bob")
    assert principal is not None
    write_only = (await world.platform.issuer.issue(principal, 600, [Scope.VAULT_ITEMS_WRITE])).secret

    no_token = await list_changes(client, JSON, None, **bad)
    no_scope = await list_changes(client, JSON, write_only, vault_id="acme-private", **bad)
    not_member = await list_changes(client, JSON, world.token("bob"), vault_id="acme-private", **bad)
    no_vault = await list_changes(client, JSON, world.token("bob"), vault_id="no-such-vault", **bad)

    assert error_of(no_token)["code"] == "unauthenticated"
    assert error_of(no_scope)["code"] == "permission_denied"
    assert "vault.items.read" in error_of(no_scope)["message"]
    assert error_of(not_member) == error_of(no_vault)
    assert error_of(not_member)["message"] == "the caller is not a member of this vault"


async def test_malformed_requests_are_refused_naming_the_field(client: httpx.AsyncClient, world: World) -> None:
    negative_size = await list_changes(client, JSON, world.token("bob"), page_size=-1)
    negative = await list_changes(client, JSON, world.token("bob"), since_sequence=-1)

    for response, field in ((negative_size, "pageSize"), (negative, "sinceSequence")):
        assert error_of(response)["code"] == "invalid_argument"
        violations = detail(error_of(response), "google.rpc.BadRequest")["fieldViolations"]
        assert [v["field"] for v in violations] == [field]


# WatchChanges over Connect streaming (application/connect+json and +proto)


def stream_headers(codec: Codec, token: str | None) -> dict[str, str]:
    result = {"Content-Type": f"application/connect+{codec.name}", "Connect-Protocol-Version": "1"}
    if token is not None:
        result["Authorization"] = f"Bearer {token}"
    return result


def enveloped(codec: Codec, message: vault_pb2.WatchChangesRequest) -> bytes:
    body = codec.encode(message)
    return struct.pack(">BI", 0, len(body)) + body


def frames(data: bytes) -> list[tuple[int, bytes]]:
    found = []
    while data:
        flags, size = struct.unpack(">BI", data[:5])
        found.append((flags, data[5 : 5 + size]))
        data = data[5 + size :]
    return found


def watch_outcome(codec: Codec, data: bytes) -> tuple[list[vault_pb2.WatchChangesResponse], dict[str, Any]]:
    """The messages of a finished stream and its end (with `error` when it failed)."""
    found = frames(data)
    assert found, "an empty stream"
    flags, end = found[-1]
    assert flags == 2, found
    messages = [codec.decode(body, vault_pb2.WatchChangesResponse) for _, body in found[:-1]]
    ending: dict[str, Any] = json.loads(end)
    return messages, ending


async def watch(
    client: httpx.AsyncClient, codec: Codec, token: str | None, since: int = 0, vault_id: str = VAULT
) -> httpx.Response:
    request = vault_pb2.WatchChangesRequest(vault_id=vault_id, since_sequence=since)
    return await client.post(WATCH, content=enveloped(codec, request), headers=stream_headers(codec, token))


async def until(condition: Any) -> None:
    async with asyncio.timeout(STEP):
        while not condition():
            await asyncio.sleep(0.01)


async def test_a_watch_sends_the_backlog_then_heartbeats_until_its_token_is_revoked(
    client: httpx.AsyncClient, sending: Sending, codec: Codec, world: World
) -> None:
    bob = world.token("bob")
    caller = await world.platform.authenticator.authenticate(
        Presented(bob, dpop_scheme=False), ProofRequest(None, "POST", BASE_URL)
    )
    watching = asyncio.ensure_future(watch(client, codec, bob, since=4))
    # The in-process transport hands the whole stream over at its end: end it by revoking, once
    # the backlog is sent (revoked before, the watch ends before it: nothing is sent after a revocation).
    await until(lambda: sending.sent("WatchChanges") >= 1)
    await world.platform.store.revoke_token_tree(caller.token.token_id, OPERATOR)
    response = await asyncio.wait_for(watching, STEP)

    assert response.status_code == 200
    assert response.headers["content-type"] == f"application/connect+{codec.name}"
    assert response.headers["cache-control"] == "no-store"
    messages, end = watch_outcome(codec, response.content)
    assert ids(messages[0].changes) == [("item-5", 5), ("item-6", 6)]
    assert (messages[0].cursor.vault_id, messages[0].cursor.sequence) == (VAULT, 6)
    heartbeats = messages[1:]  # as many as the revocation took to happen (the domain's tests count them)
    assert all(not m.changes and m.cursor.sequence == SEEDED for m in heartbeats)
    assert brief(end["error"]) == {"code": "unauthenticated", "message": "token revoked", "reason": "TOKEN_REVOKED"}
    assert world.platform.sync.slots.total == 0


async def test_a_watch_needs_a_token_and_membership_and_a_usable_cursor(
    client: httpx.AsyncClient, codec: Codec, world: World
) -> None:
    anonymous = await watch(client, codec, None)
    stranger = await watch(client, codec, world.token("bob"), vault_id="acme-private")
    ahead = await watch(client, codec, world.token("bob"), since=SEEDED + 1)

    messages, end = watch_outcome(codec, anonymous.content)
    assert (messages, brief(end["error"])) == (
        [],
        {"code": "unauthenticated", "message": "missing Authorization header", "reason": "TOKEN_MISSING"},
    )
    assert watch_outcome(codec, stranger.content)[1]["error"]["code"] == "permission_denied"
    messages, end = watch_outcome(codec, ahead.content)
    assert (messages, end["error"]["code"]) == ([], "out_of_range")
    info = next(d for d in end["error"]["details"] if d["type"] == "google.rpc.ErrorInfo")
    assert base64.b64decode(info["value"] + "==")  # the detail is there, encoded


async def test_a_watch_whose_request_breaks_the_field_rules_ends_invalid_argument_after_authentication(
    client: httpx.AsyncClient, codec: Codec, world: World
) -> None:
    bad = await watch(client, codec, world.token("bob"), since=-1, vault_id="no spaces")
    anonymous = await watch(client, codec, None, since=-1, vault_id="no spaces")

    messages, end = watch_outcome(codec, bad.content)
    assert (messages, end["error"]["code"]) == ([], "invalid_argument")
    detail = next(d for d in end["error"]["details"] if d["type"] == "google.rpc.BadRequest")
    violations = error_details_pb2.BadRequest.FromString(base64.b64decode(detail["value"] + "==")).field_violations
    assert sorted(v.field for v in violations) == ["sinceSequence", "vaultId"]
    assert watch_outcome(codec, anonymous.content)[1]["error"]["code"] == "unauthenticated"
    assert world.platform.sync.slots.total == 0


async def test_a_server_shutting_down_ends_a_watch_unavailable(
    app: Server, client: httpx.AsyncClient, world: World
) -> None:
    watching = asyncio.ensure_future(watch(client, JSON, world.token("bob"), since=SEEDED))
    await until(lambda: world.platform.sync.slots.total == 1)

    app.end_streams()
    response = await asyncio.wait_for(watching, STEP)

    _, end = watch_outcome(JSON, response.content)
    assert end["error"]["code"] == "unavailable"
    await until(lambda: world.platform.sync.slots.total == 0)


async def test_watches_beyond_the_principals_limit_are_refused_with_retry_info(clock: FakeClock) -> None:
    platform = Platform.build(MemoryStore(), PEPPER, clock, watch_policy=WatchPolicy(max_per_principal=1))
    world = await World.seed(platform)
    app = create_app(Settings(), platform=platform)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE_URL) as client:
        first = asyncio.ensure_future(watch(client, PROTO, world.token("bob"), since=SEEDED))
        await until(lambda: platform.sync.slots.total == 1)
        refused = await watch(client, PROTO, world.token("bob"), since=SEEDED)
        app.end_streams()
        await asyncio.wait_for(first, STEP)

    _, end = watch_outcome(PROTO, refused.content)
    assert end["error"]["code"] == "resource_exhausted"
    assert [d["type"] for d in end["error"]["details"]] == ["google.rpc.ErrorInfo", "google.rpc.RetryInfo"]
    assert detail(end["error"], "google.rpc.ErrorInfo")["metadata"] == {"limit": "1", "appliesTo": "principal"}


async def test_a_watch_ends_at_its_deadline(client: httpx.AsyncClient, world: World) -> None:
    request = vault_pb2.WatchChangesRequest(vault_id=VAULT, since_sequence=SEEDED)
    response = await client.post(
        WATCH,
        content=enveloped(JSON, request),
        headers={**stream_headers(JSON, world.token("bob")), "Connect-Timeout-Ms": "300"},
    )

    _, end = watch_outcome(JSON, response.content)
    assert end["error"]["code"] == "deadline_exceeded"
    assert world.platform.sync.slots.total == 0
