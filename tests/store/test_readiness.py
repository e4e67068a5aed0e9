"""Readiness follows the store: `/readyz` and the gRPC health service answer not ready while the
store cannot be reached, and ready again once it can; `/healthz` (liveness) answers ok throughout.

PostgreSQL is made unreachable by the TCP proxy of tests/store/test_store_outages.py (stopped:
every connection cut, new ones refused). tests/e2e/test_store_outage.py stops a real server.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import AsyncIterator
from pathlib import Path

import httpx

from tests.connect import JSON, headers
from tests.store.stores import closing, migrated
from tests.store.test_store_outages import Proxy, assert_unavailable, list_items, proxy  # noqa: F401 # a fixture
from tests.world import BASE_URL, PEPPER, FakeClock, World
from zkplatform.app import create_app
from zkplatform.config import Settings
from zkplatform.domain.ports.store import Store
from zkplatform.domain.readiness import Readiness
from zkplatform.store.postgres import PostgresStore
from zkplatform.store.sqlite import SQLiteStore
from zkplatform.wiring import Platform
from zkplatform_api.grpc.health.v1.health_pb2 import HealthCheckRequest, HealthCheckResponse

CHECK = "/grpc.health.v1.Health/Check"
WAIT_S = 20.0  # for the cached probe to notice: its second, and a ping's 2 s


@contextlib.asynccontextmanager
async def serving(
    store: Store, clock: FakeClock, readiness: Readiness | None = None
) -> AsyncIterator[tuple[httpx.AsyncClient, World]]:
    platform = Platform.build(store, PEPPER, clock)
    if readiness is not None:
        platform = dataclasses.replace(platform, readiness=readiness)
    world = await World.seed(platform)
    app = create_app(Settings(), platform=platform)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE_URL) as client:
        yield client, world


async def health(client: httpx.AsyncClient, service: str = "") -> str:
    response = await client.post(CHECK, content=JSON.encode(HealthCheckRequest(service=service)), headers=headers(JSON))
    assert response.status_code == 200, response.text
    return HealthCheckResponse.ServingStatus.Name(JSON.decode(response.content, HealthCheckResponse).status)


async def readyz_until(client: httpx.AsyncClient, status: int) -> httpx.Response:
    """GET /readyz until it answers `status` (bounded): its readiness is a probe cached for a second."""
    deadline = time.monotonic() + WAIT_S
    while True:
        response = await client.get("/readyz")
        if response.status_code == status or time.monotonic() > deadline:
            return response


async def test_readyz_and_health_follow_the_store(proxy: tuple[Proxy, str], clock: FakeClock) -> None:  # noqa: F811
    gateway, url = proxy
    async with closing(PostgresStore.open(url)) as store, serving(store, clock) as (client, _):
        ready = await client.get("/readyz")
        serving_before = [await health(client), await health(client, "platform.v1.VaultService")]

        await gateway.stop()
        down = await readyz_until(client, 503)
        serving_during = [await health(client), await health(client, "platform.v1.VaultService")]
        alive = await client.get("/healthz")
        head = await client.head("/readyz")

        await gateway.start()
        back = await readyz_until(client, 200)
        serving_after = [await health(client), await health(client, "platform.v1.BrokerService")]

    assert (ready.status_code, ready.text) == (200, "ok\n")
    assert serving_before == ["SERVING", "SERVING"]
    assert (down.status_code, down.text) == (503, "store unavailable\n")
    assert down.headers["content-type"].startswith("text/plain")
    assert serving_during == ["NOT_SERVING", "NOT_SERVING"]
    assert (alive.status_code, alive.text) == (200, "ok\n")
    assert head.status_code == 503
    assert (back.status_code, back.text) == (200, "ok\n")
    assert serving_after == ["SERVING", "SERVING"]


async def test_readiness_is_cached_and_a_call_that_finds_the_store_down_marks_it_down_at_once(
    proxy: tuple[Proxy, str],  # noqa: F811
    clock: FakeClock,
) -> None:
    """Health checks take the probe's cached answer (no query of their own): with an hour's
    cache, a stopped store still reads as ready, until a call fails on it."""
    gateway, url = proxy
    async with closing(PostgresStore.open(url, acquire_timeout=2.0)) as store:
        readiness = Readiness(store.ping, fresh_for=3600)
        async with serving(store, clock, readiness) as (client, world):
            probed = await client.get("/readyz")
            await gateway.stop()
            cached = [(await client.get("/readyz")).status_code for _ in range(3)]
            cached_health = await health(client)
            call = await list_items(client, world)
            marked = await client.get("/readyz")
            marked_health = await health(client)

    assert probed.status_code == 200, probed.text
    assert cached == [200, 200, 200]
    assert cached_health == "SERVING"
    assert_unavailable(call)
    assert marked.status_code == 503
    assert marked_health == "NOT_SERVING"


async def test_a_sqlite_store_that_can_be_read_is_ready(tmp_path: Path, clock: FakeClock) -> None:
    """SQLite's ping reads the file: a store that serves is ready (and the ping is no broken SQL)."""
    path = tmp_path / "store.db"
    await migrated(f"sqlite:///{path}")
    async with closing(SQLiteStore.open(path)) as store:
        readiness = Readiness(store.ping)
        async with serving(store, clock, readiness) as (client, _):
            ready = await client.get("/readyz")
            status = await health(client)
        pinged = await readiness.ready()

    assert (ready.status_code, ready.text) == (200, "ok\n")
    assert status == "SERVING"
    assert pinged
