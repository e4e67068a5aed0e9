"""A burst that holds every pooled connection is overload, not an outage (issue 39, item 4).

On a real PostgreSQL with a pool of two: two calls are held inside the database (by a lock an
admin connection takes), then a burst of calls finds no connection free for the pool's whole
wait. They answer `resource_exhausted` with the reason STORE_BUSY and a RetryInfo, never
`unavailable`; `/readyz`, probed all through the burst, stays 200 (the ping has a connection of
its own, and a busy call marks nothing down); the held calls finish once the lock goes. A
database that really goes away (the TCP proxy of tests/store/test_store_outages.py, stopped)
still reads as down, pool full or not.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator

import httpx
import psycopg

from tests.connect import brief, detail, error_of
from tests.store.stores import closing
from tests.store.test_readiness import readyz_until, serving
from tests.store.test_store_outages import Proxy, assert_unavailable, list_items, proxy  # noqa: F401 # a fixture
from tests.world import FakeClock, World
from zkplatform.domain.readiness import Readiness
from zkplatform.store.postgres import PostgresStore

POOL = 2
ACQUIRE_TIMEOUT = 1.0  # seconds a call waits for a pooled connection
BURST = 8
WAIT_S = 20.0


@contextlib.asynccontextmanager
async def items_locked(url: str) -> AsyncIterator[None]:
    """An admin connection of its own (outside every pool) holds `items` locked until the block ends."""
    async with await psycopg.AsyncConnection.connect(url) as admin:
        await admin.execute("LOCK TABLE items IN ACCESS EXCLUSIVE MODE")
        try:
            yield
        finally:
            await admin.rollback()


async def calls_waiting_on_the_lock(url: str) -> int:
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as admin:
        row = await (
            await admin.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"
            )
        ).fetchone()
    return int(row[0]) if row else 0


async def hold_the_pool(url: str, client: httpx.AsyncClient, world: World) -> list[asyncio.Task[httpx.Response]]:
    """POOL calls, each holding a pooled connection inside the database (blocked by the lock), once
    the database shows them all waiting (observed, bounded)."""
    held = [asyncio.create_task(list_items(client, world)) for _ in range(POOL)]
    deadline = time.monotonic() + WAIT_S
    while await calls_waiting_on_the_lock(url) < POOL:
        assert time.monotonic() < deadline, "the held calls never reached the lock"
        assert not any(task.done() for task in held), [task.result().text for task in held if task.done()]
        await asyncio.sleep(0.02)
    return held


def assert_busy(response: httpx.Response) -> None:
    assert response.status_code == 429, response.text
    error = error_of(response)
    assert brief(error) == {
        "code": "resource_exhausted",
        "message": "the server is busy; try again shortly",
        "reason": "STORE_BUSY",
    }
    assert detail(error, "google.rpc.RetryInfo")["retryDelay"] == "1s"


async def burst_while_probing(client: httpx.AsyncClient, world: World) -> tuple[list[httpx.Response], list[int]]:
    """BURST calls at once, and /readyz asked over and over until they have all answered."""
    burst = asyncio.gather(*(list_items(client, world) for _ in range(BURST)))
    probes: list[int] = []
    while not burst.done():
        probes.append((await client.get("/readyz")).status_code)
    return await burst, probes


async def test_a_burst_that_exhausts_the_pool_is_busy_and_the_server_stays_ready(
    postgres_url: str,
    proxy: tuple[Proxy, str],  # noqa: F811
    clock: FakeClock,
) -> None:
    """Readiness asks the database at every probe (nothing cached): the ping must not wait on the pool."""
    _, url = proxy
    opening = PostgresStore.open(url, max_size=POOL, acquire_timeout=ACQUIRE_TIMEOUT)
    async with (
        closing(opening) as store,
        serving(store, clock, Readiness(store.ping, fresh_for=0.0)) as (client, world),
    ):
        before = await list_items(client, world)
        async with items_locked(postgres_url):
            held = await hold_the_pool(postgres_url, client, world)
            answers, probes = await burst_while_probing(client, world)
        done = await asyncio.gather(*held)
        after = await client.get("/readyz")

    assert before.status_code == 200, before.text
    for answer in answers:
        assert_busy(answer)
    assert probes, "no probe ran during the burst"
    assert set(probes) == {200}, probes
    assert [response.status_code for response in done] == [200] * POOL, [response.text for response in done]
    assert after.status_code == 200, after.text


async def test_a_call_that_finds_the_pool_busy_does_not_mark_the_store_down(
    postgres_url: str,
    proxy: tuple[Proxy, str],  # noqa: F811
    clock: FakeClock,
) -> None:
    """With an hour's cache, only a call's mark could change the probe's answer (as an outage's does:
    tests/store/test_readiness.py); a busy one does not."""
    _, url = proxy
    opening = PostgresStore.open(url, max_size=POOL, acquire_timeout=ACQUIRE_TIMEOUT)
    async with (
        closing(opening) as store,
        serving(store, clock, Readiness(store.ping, fresh_for=3600)) as (client, world),
    ):
        ready = await client.get("/readyz")
        async with items_locked(postgres_url):
            held = await hold_the_pool(postgres_url, client, world)
            busy = await list_items(client, world)
            during = await client.get("/readyz")
        await asyncio.gather(*held)

    assert ready.status_code == 200, ready.text
    assert_busy(busy)
    assert during.status_code == 200, during.text


async def list_items_until_ok(client: httpx.AsyncClient, world: World) -> httpx.Response:
    """ListItems until it answers 200, for at most WAIT_S: what the pool's reconnection brings back."""
    deadline = asyncio.get_running_loop().time() + WAIT_S
    while True:
        response = await list_items(client, world)
        if response.status_code == 200 or asyncio.get_running_loop().time() > deadline:
            return response
        await asyncio.sleep(0.05)


async def test_a_database_that_goes_away_while_the_pool_is_full_reads_as_down(
    postgres_url: str,
    proxy: tuple[Proxy, str],  # noqa: F811
    clock: FakeClock,
) -> None:
    gateway, url = proxy
    opening = PostgresStore.open(url, max_size=POOL, acquire_timeout=ACQUIRE_TIMEOUT)
    async with (
        closing(opening) as store,
        serving(store, clock, Readiness(store.ping, fresh_for=0.0)) as (client, world),
    ):
        async with items_locked(postgres_url):
            held = await hold_the_pool(postgres_url, client, world)
            await gateway.stop()  # every connection through it cut, new ones refused
            cut = await asyncio.gather(*held)
            down = await readyz_until(client, 503)
            call = await list_items(client, world)
        await gateway.start()
        back = await readyz_until(client, 200)
        # The readiness probe has a connection of its own: the pool reconnects on its own schedule
        # (psycopg_pool's backoff), so the calls recover soon after, not necessarily at once.
        after = await list_items_until_ok(client, world)

    for response in cut:
        assert_unavailable(response)
    assert (down.status_code, down.text) == (503, "store unavailable\n")
    assert_unavailable(call)
    assert back.status_code == 200, back.text
    assert after.status_code == 200, after.text
