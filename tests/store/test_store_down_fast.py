"""A PostgreSQL store that cannot be reached answers fast (issue 40): calls 503 at once while it
is known down instead of each waiting the pool's 5 s acquire timeout, `/readyz` within its bound
whatever a probe takes (a load balancer's 1 s health timeout sees 503s, never timeouts), and all
of it recovers once the database can be reached again.

PostgreSQL is behind the TCP proxy of test_store_outages.py: stopped (connections cut, new ones
refused: a server that went away), or frozen (nothing answered, nothing cut: a network that drops
packets, where a ping takes its whole PING_TIMEOUT). The stores keep the default acquire timeout.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

import httpx

from tests.store.stores import closing
from tests.store.test_store_outages import (  # noqa: F401 # proxy: a fixture
    Proxy,
    answers_until,
    assert_unavailable,
    list_items,
    proxy,
    serving,
)
from tests.world import FakeClock
from zkplatform.domain.readiness import ANSWER_WITHIN
from zkplatform.store.postgres import ACQUIRE_TIMEOUT, PostgresStore
from zkplatform.store.postgres.connection import PING_TIMEOUT
from zkplatform.store.postgres.database import SUSPECT_AFTER

T = TypeVar("T")
# Generous for a busy 2-core machine, and far below ACQUIRE_TIMEOUT (5 s), what each took before.
CALL_S = 1.0  # a call while the store is known down (milliseconds in practice)
FIRST_S = SUSPECT_AFTER + PING_TIMEOUT + 1.0  # the call that finds it down: a wait, then a ping
READYZ_S = ANSWER_WITHIN + 0.4  # below a load balancer's 1 s timeout
RECOVERY_S = 20.0


async def timed(call: Callable[[], Awaitable[T]]) -> tuple[T, float]:
    started = time.monotonic()
    answer = await call()
    return answer, time.monotonic() - started


async def test_a_database_that_went_away_is_answered_at_once(
    proxy: tuple[Proxy, str],  # noqa: F811
    clock: FakeClock,
) -> None:
    gateway, url = proxy
    assert ACQUIRE_TIMEOUT >= 5.0  # the wait each call took before
    async with closing(PostgresStore.open(url)) as store, serving(store, clock) as (client, world):
        before = await list_items(client, world)
        await gateway.stop()
        first, first_took = await timed(lambda: list_items(client, world))
        calls = [await timed(lambda: list_items(client, world)) for _ in range(10)]
        checks = [await timed(lambda: client.get("/readyz")) for _ in range(5)]
        await gateway.start()
        back = await answers_until(client, "/readyz", 200, RECOVERY_S)
        after = await list_items(client, world)

    assert before.status_code == 200, before.text
    assert_unavailable(first)
    assert first_took < FIRST_S
    for answer, took in calls:
        assert_unavailable(answer)
        assert took < CALL_S
    assert [answer.status_code for answer, _ in checks] == [503] * 5
    assert max(took for _, took in checks) < READYZ_S
    assert back.status_code == 200
    assert after.status_code == 200, after.text
    assert after.json()["items"] == before.json()["items"]


async def test_readyz_answers_within_its_bound_while_the_database_does_not_answer(
    proxy: tuple[Proxy, str],  # noqa: F811
    clock: FakeClock,
) -> None:
    """A frozen network: the probe's ping waits its whole PING_TIMEOUT (2 s), which a check never
    waits for: it answers what was last known, until the ping gives up and the store is down."""
    gateway, url = proxy
    async with closing(PostgresStore.open(url)) as store, serving(store, clock) as (client, world):
        assert (await client.get("/readyz")).status_code == 200
        await gateway.freeze()
        checks: list[tuple[httpx.Response, float]] = []
        deadline = time.monotonic() + RECOVERY_S
        while time.monotonic() < deadline and (not checks or checks[-1][0].status_code != 503):
            checks.append(await timed(lambda: client.get("/readyz")))
        calls = [await timed(lambda: list_items(client, world)) for _ in range(5)]
        await gateway.stop()
        await gateway.start()
        back = await answers_until(client, "/readyz", 200, RECOVERY_S)
        after = await list_items(client, world)

    assert checks[-1][0].status_code == 503
    assert {answer.status_code for answer, _ in checks[:-1]} <= {200}  # the last answer, while the ping runs
    assert max(took for _, took in checks) < READYZ_S
    for answer, took in calls:
        assert_unavailable(answer)
        assert took < CALL_S
    assert back.status_code == 200
    assert after.status_code == 200, after.text
