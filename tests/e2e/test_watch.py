"""WatchChanges on a real server: a change made by another client reaches a watch within about
a second over Connect (JSON and binary, HTTP/1.1 and HTTP/2), gRPC-Web, gRPC (grpcio) and
buf curl; heartbeats; a revoked token, the limits and SIGTERM end a watch as the contract says."""

from __future__ import annotations

import asyncio
import itertools
import json
import queue
import signal
import subprocess
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import grpc
import httpx
import pytest

from tests.connect import JSON, headers
from tests.e2e.server import Server, serving
from tests.e2e.test_buf_curl import BUF, REPO
from tests.e2e.watch_client import Ended, Watch, watching
from zkplatform_api.platform.v1 import vault_pb2, vault_pb2_grpc

HEARTBEAT = 1  # seconds, set for these servers
STEP = 15.0  # seconds: bounds a wait for a message due within a heartbeat or a second
LATENCY = 5.0  # seconds a change may take to reach a watch here (about one is the goal; a busy machine)
SERVICE = "/platform.v1.VaultService"
ENV = {"ZKPLATFORM_WATCH_HEARTBEAT_SECONDS": str(HEARTBEAT), "ZKPLATFORM_WATCH_MAX_PER_PRINCIPAL": "2"}
_names = (f"watched-{n}" for n in itertools.count())


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with serving(tmp_path_factory.mktemp("watch"), "--dev", env=ENV) as server:
        yield server


def dev_token(server: Server, principal_id: str) -> str:
    credentials = json.loads((server.log_path.parent / "var" / "dev-credentials.json").read_text())
    return str(
        next(p["token"] for t in credentials["tenants"] for p in t["principals"] if p["principalId"] == principal_id)
    )


@pytest.fixture
async def client(server: Server) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=server.base_url, timeout=30) as client:
        yield client


def item_body(vault_id: str, item_id: str, **more: Any) -> dict[str, Any]:
    return {
        "vaultId": vault_id,
        "itemId": item_id,
        "kind": "login",
        "titleHash": "dGg",
        "encryptedPayload": {"alg": "A256GCM", "nonce": "bm9uY2U", "aad": "", "ciphertext": "Y2lwaGVy", "version": 1},
        "wrappedKeys": [
            {"recipientId": "alice", "wrapAlg": "A256KW", "wrappedKey": "a2V5YQ"},
            {"recipientId": "bob", "wrapAlg": "A256KW", "wrappedKey": "a2V5Yg"},
        ],
        **more,
    }


def call(server: Server, token: str, method: str, body: dict[str, Any]) -> dict[str, Any]:
    """A unary call by another client (its own connection)."""
    response = httpx.post(f"{server.base_url}{method}", json=body, headers=headers(JSON, token), timeout=30)
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


def current_sequence(server: Server, token: str, vault_id: str) -> int:
    """The vault's cursor now: a create's (then the watch starts after it)."""
    created = call(server, token, f"{SERVICE}/CreateItem", item_body(vault_id, next(_names)))
    return int(created["cursor"]["sequence"])


async def next_message(watch: Watch) -> vault_pb2.WatchChangesResponse:
    message = await asyncio.wait_for(watch.next(), STEP)
    assert not isinstance(message, Ended), message
    return message


async def next_change(watch: Watch) -> tuple[vault_pb2.ItemChange, float]:
    """The next change (heartbeats skipped), and when it arrived."""
    while not (message := await next_message(watch)).changes:
        pass
    assert len(message.changes) == 1, message
    return message.changes[0], time.monotonic()


async def end_of(watch: Watch) -> Ended:
    while not isinstance(message := await asyncio.wait_for(watch.next(), STEP), Ended):
        pass
    return message


@pytest.mark.parametrize("protocol", ["connect-json", "connect-proto", "grpc-web"])
@pytest.mark.parametrize("http2", [False, True], ids=["http1", "http2"])
async def test_a_watch_sees_a_create_an_update_and_a_delete_by_another_client(
    server: Server, protocol: str, http2: bool
) -> None:
    bob, alice = dev_token(server, "bob"), dev_token(server, "alice")
    since = current_sequence(server, alice, "acme-shared")
    item_id = next(_names)
    async with (
        httpx.AsyncClient(base_url=server.base_url, timeout=30, http1=not http2, http2=http2) as client,
        watching(client, bob, "acme-shared", since, protocol) as watch,
    ):
        assert watch.response.status_code == 200
        assert watch.response.http_version == ("HTTP/2" if http2 else "HTTP/1.1")
        caught_up = await next_message(watch)  # no backlog: the marker alone, and the watch is live
        assert (list(caught_up.changes), caught_up.cursor.sequence, caught_up.caught_up) == ([], since, True)

        sent = time.monotonic()
        call(server, alice, f"{SERVICE}/CreateItem", item_body("acme-shared", item_id))
        created, arrived = await next_change(watch)
        assert (created.item.item_id, created.item.version, created.sequence) == (item_id, 1, since + 1)
        assert arrived - sent < LATENCY

        call(server, alice, f"{SERVICE}/UpdateItem", item_body("acme-shared", item_id, baseVersion=1))
        updated, _ = await next_change(watch)
        call(server, alice, f"{SERVICE}/DeleteItem", {"vaultId": "acme-shared", "itemId": item_id, "baseVersion": 2})
        deleted, _ = await next_change(watch)

    assert (updated.item.version, updated.sequence) == (2, since + 2)
    assert (deleted.item.deleted, deleted.item.version, deleted.sequence) == (True, 3, since + 3)


def test_a_grpc_watch_sees_a_change_by_another_client(server: Server) -> None:
    bob, alice = dev_token(server, "bob"), dev_token(server, "alice")
    since = current_sequence(server, alice, "acme-shared")
    item_id = next(_names)
    with grpc.insecure_channel(server.base_url.removeprefix("http://")) as channel:
        stub = vault_pb2_grpc.VaultServiceStub(channel)  # type: ignore[no-untyped-call]
        stream = stub.WatchChanges(
            vault_pb2.WatchChangesRequest(vault_id="acme-shared", since_sequence=since),
            metadata=[("authorization", f"Bearer {bob}")],
            timeout=STEP,  # bounds every read below
        )
        caught_up = next(stream)  # no backlog: the marker alone
        assert (list(caught_up.changes), caught_up.cursor.sequence, caught_up.caught_up) == ([], since, True)
        sent = time.monotonic()
        call(server, alice, f"{SERVICE}/CreateItem", item_body("acme-shared", item_id))
        message = next(m for m in stream if m.changes)
        arrived = time.monotonic()
        stream.cancel()
    assert [(c.item.item_id, c.sequence) for c in message.changes] == [(item_id, since + 1)]
    assert arrived - sent < LATENCY


@pytest.mark.parametrize("protocol", ["connect", "grpc", "grpcweb"])
def test_buf_curl_watches_and_sees_a_change(server: Server, protocol: str) -> None:
    bob, alice = dev_token(server, "bob"), dev_token(server, "alice")
    since = current_sequence(server, alice, "acme-shared")
    item_id = next(_names)
    command = [
        BUF,
        "curl",
        "--http2-prior-knowledge",
        "--schema",
        ".",
        "--protocol",
        protocol,
        "-H",
        f"Authorization: Bearer {bob}",
        "-d",
        json.dumps({"vaultId": "acme-shared", "sinceSequence": str(since)}),
        f"{server.base_url}{SERVICE}/WatchChanges",
    ]
    lines: queue.Queue[str] = queue.Queue()
    with subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True) as process:

        def read() -> None:
            for line in process.stdout or ():
                lines.put(line)

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        try:
            seen = ""
            while '"cursor"' not in seen:  # the caught-up marker: the watch is live
                seen += lines.get(timeout=STEP)
            call(server, alice, f"{SERVICE}/CreateItem", item_body("acme-shared", item_id))
            seen = ""
            while item_id not in seen:
                seen += lines.get(timeout=STEP)
        finally:
            process.terminate()
            process.wait(timeout=STEP)
            reader.join(timeout=STEP)


async def test_a_revoked_token_ends_the_watch_unauthenticated(server: Server, client: httpx.AsyncClient) -> None:
    alice = dev_token(server, "alice")
    minted = call(
        server,
        alice,
        "/platform.v1.BrokerService/MintUserApiToken",
        {"tenantId": "acme", "requestedScopes": ["vault.items.read"]},
    )["token"]
    async with watching(client, minted["accessToken"], "acme-shared", 0) as watch:
        await next_message(watch)  # the backlog
        call(server, alice, "/platform.v1.BrokerService/RevokeToken", {"tokenId": minted["tokenId"]})
        ended = await end_of(watch)
    assert ended == Ended("unauthenticated", "token revoked")


async def test_watches_beyond_the_principals_limit_are_refused(server: Server, client: httpx.AsyncClient) -> None:
    carol = dev_token(server, "carol")
    async with (
        watching(client, carol, "globex-main", 0) as first,
        watching(client, carol, "globex-main", 0) as second,
    ):
        await next_message(first)
        await next_message(second)
        async with watching(client, carol, "globex-main", 0) as third:
            refused = await end_of(third)
    assert refused.code == "resource_exhausted"
    # The two watches gave their slots back when their clients left.
    deadline = time.monotonic() + STEP
    while True:
        async with watching(client, carol, "globex-main", 0) as again:
            outcome = await asyncio.wait_for(again.next(), STEP)
        if not isinstance(outcome, Ended) or time.monotonic() > deadline:
            break
        await asyncio.sleep(0.1)  # the server notices a client gone at its next write
    assert not isinstance(outcome, Ended), outcome


async def test_sigterm_ends_a_watch_unavailable(tmp_path: Path) -> None:
    with serving(tmp_path, "--dev", env=ENV) as server:
        async with (
            httpx.AsyncClient(base_url=server.base_url, timeout=30) as client,
            watching(client, dev_token(server, "bob"), "acme-shared", 0) as watch,
        ):
            await next_message(watch)
            server.process.send_signal(signal.SIGTERM)
            ended = await end_of(watch)
        assert await asyncio.to_thread(server.process.wait, STEP) == 0
    assert ended.code == "unavailable"
