"""A PostgreSQL outage under a real `zkplatform serve` (issue 40): an open WatchChanges ends with
`unavailable` STORE_UNAVAILABLE within WATCH_S of the store going down (it noticed 12 s late,
or at its next heartbeat), calls answer 503 at once and `/readyz` within its bound while the store
is known down, and everything recovers once it can be reached again.

The database is behind the TCP proxy of tests/store/test_store_outages.py, run on a thread of its
own (the server is another process): stopped, it cuts every connection, as a database that went
away does, and the server's LISTEN connection sees it at once; frozen, it answers nothing and cuts
nothing, as a network that drops packets: then what finds the store down is a probe, here a load
balancer's `/readyz`, and the watch ends as soon as the probe has.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import TypeVar
from urllib.parse import urlsplit, urlunsplit

import httpx
import pytest

from tests.connect import JSON, brief, error_of, headers
from tests.e2e.server import Server, serving
from tests.e2e.test_durable import ENV, seeded
from tests.e2e.watch_client import Ended, Watch, watching
from tests.store.test_store_outages import Proxy
from zkplatform.domain.readiness import ANSWER_WITHIN
from zkplatform.store.postgres.connection import PING_TIMEOUT
from zkplatform_api.platform.v1 import vault_pb2

T = TypeVar("T")
LIST_ITEMS = "/platform.v1.VaultService/ListItems"
# The bounds this server keeps, with room for a busy 2-core machine (each is milliseconds when
# the database's connections are cut): a watch ends within a ping of the store being found down.
WATCH_S = PING_TIMEOUT + 2.0
CALL_S = 1.0
READYZ_S = ANSWER_WITHIN + 0.4  # below a load balancer's 1 s timeout
RECOVERY_S = 20.0
UNAVAILABLE = {
    "code": "unavailable",
    "message": "the store is unavailable; try again later",
    "reason": "STORE_UNAVAILABLE",
}


class ThreadedProxy:
    """The outage proxy, on an event loop of its own thread."""

    def __init__(self, host: str, port: int) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="outage proxy", daemon=True)
        self._thread.start()
        self.proxy = Proxy(host, port)

    def run(self, action: Callable[[], Awaitable[None]]) -> None:
        async def run() -> None:
            await action()

        asyncio.run_coroutine_threadsafe(run(), self._loop).result(timeout=30)

    def close(self) -> None:
        self.run(self.proxy.stop)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=30)
        self._loop.close()


@pytest.fixture
def gateway(postgres_url: str) -> Iterator[tuple[ThreadedProxy, str, str]]:
    """The test's database, migrated and seeded, behind a started proxy: the proxy, the URL
    through it, and bob's token."""
    bob = seeded(postgres_url).token("bob")
    parts = urlsplit(postgres_url)
    gateway = ThreadedProxy(parts.hostname or "127.0.0.1", parts.port or 5432)
    gateway.run(gateway.proxy.start)
    user = f"{parts.username}@" if parts.username else ""
    try:
        yield gateway, urlunsplit(parts._replace(netloc=f"{user}127.0.0.1:{gateway.proxy.port}")), bob
    finally:
        gateway.close()


async def timed(call: Callable[[], Awaitable[T]]) -> tuple[T, float]:
    started = time.monotonic()
    answer = await call()
    return answer, time.monotonic() - started


async def caught_up(watch: Watch) -> vault_pb2.WatchChangesResponse:
    """Messages until the one that ends the backlog (bounded)."""
    async with asyncio.timeout(RECOVERY_S):
        while True:
            message = await watch.next()
            assert not isinstance(message, Ended), message
            if message.caught_up:
                return message


async def ended(watch: Watch) -> tuple[Ended | vault_pb2.WatchChangesResponse, float]:
    """What the watch says next, once it is not a heartbeat, and when (bounded by RECOVERY_S)."""
    started = time.monotonic()
    async with asyncio.timeout(RECOVERY_S):
        while not isinstance(message := await watch.next(), Ended) and not message.changes:
            pass
    return message, time.monotonic() - started


def list_items(client: httpx.AsyncClient, token: str) -> Awaitable[httpx.Response]:
    return client.post(LIST_ITEMS, json={"vaultId": "acme-shared"}, headers=headers(JSON, token))


async def recovered(client: httpx.AsyncClient, server: Server, token: str) -> tuple[int, int, bool]:
    """/readyz until 200 (bounded), then a call and a new watch's marker."""
    deadline = time.monotonic() + RECOVERY_S
    while (ready := await client.get("/readyz")).status_code != 200 and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    listed = await list_items(client, token)
    async with watching(client, token, "acme-shared", 0) as watch:
        marker = await caught_up(watch)
    return ready.status_code, listed.status_code, marker.caught_up


def assert_refused_fast(answers: list[tuple[httpx.Response, float]]) -> None:
    for answer, took in answers:
        assert answer.status_code == 503, answer.text
        assert brief(error_of(answer)) == UNAVAILABLE
        assert took < CALL_S


async def test_a_watch_ends_at_once_when_the_database_goes_away(
    tmp_path: Path, gateway: tuple[ThreadedProxy, str, str]
) -> None:
    proxy, url, bob = gateway
    with serving(tmp_path, "--store", url, env=ENV) as server:
        async with httpx.AsyncClient(base_url=server.base_url, timeout=30) as client:
            async with watching(client, bob, "acme-shared", 0) as watch:
                await caught_up(watch)
                proxy.run(proxy.proxy.stop)
                end, watch_took = await ended(watch)
            calls = [await timed(lambda: list_items(client, bob)) for _ in range(5)]
            checks = [await timed(lambda: client.get("/readyz")) for _ in range(3)]
            proxy.run(proxy.proxy.start)
            after = await recovered(client, server, bob)
    log = server.log()

    assert end == Ended("unavailable", UNAVAILABLE["message"])
    assert watch_took < WATCH_S
    assert_refused_fast(calls)
    assert [answer.status_code for answer, _ in checks] == [503] * 3
    assert max(took for _, took in checks) < READYZ_S
    assert after == (200, 200, True)
    assert "Traceback" not in log


async def test_a_watch_ends_once_a_probe_finds_the_database_unanswering(
    tmp_path: Path, gateway: tuple[ThreadedProxy, str, str]
) -> None:
    """Nothing is cut: the watch's LISTEN connection waits on. A load balancer's `/readyz` (each
    answered within its bound, the last answer while the ping waits its PING_TIMEOUT) finds the
    store down, and the watch ends then."""
    proxy, url, bob = gateway
    with serving(tmp_path, "--store", url, env=ENV) as server:
        async with httpx.AsyncClient(base_url=server.base_url, timeout=30) as client:
            async with watching(client, bob, "acme-shared", 0) as watch:
                await caught_up(watch)
                proxy.run(proxy.proxy.freeze)
                checks: list[tuple[httpx.Response, float]] = []
                deadline = time.monotonic() + RECOVERY_S
                while time.monotonic() < deadline and (not checks or checks[-1][0].status_code != 503):
                    checks.append(await timed(lambda: client.get("/readyz")))
                end, watch_took = await ended(watch)
            calls = [await timed(lambda: list_items(client, bob)) for _ in range(5)]
            proxy.run(proxy.proxy.stop)
            proxy.run(proxy.proxy.start)
            after = await recovered(client, server, bob)

    assert checks[-1][0].status_code == 503
    assert max(took for _, took in checks) < READYZ_S
    assert end == Ended("unavailable", UNAVAILABLE["message"])
    assert watch_took < CALL_S  # measured from the probe's finding: the watch follows it at once
    assert_refused_fast(calls)
    assert after == (200, 200, True)
