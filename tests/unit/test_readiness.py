"""Readiness: one probe of the store answers every health check for a second; a call that
found the store down marks it down at once; changes reach whoever watches."""

from __future__ import annotations

import asyncio

from zkplatform.domain.errors import StoreUnavailable
from zkplatform.domain.readiness import Readiness
from zkplatform.store.memory import MemoryStore


class Store:
    """A memory store whose pings are counted, and that can be taken down."""

    def __init__(self) -> None:
        self._store = MemoryStore()
        self.pings = 0
        self.down = False

    async def ping(self) -> None:
        self.pings += 1
        await asyncio.sleep(0)  # a round trip: other health checks arrive meanwhile
        if self.down:
            raise StoreUnavailable
        await self._store.ping()


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_concurrent_checks_share_one_probe_and_its_answer_stands_for_a_second() -> None:
    store, clock = Store(), Clock()
    readiness = Readiness(store.ping, clock=clock)

    first = await asyncio.gather(*(readiness.ready() for _ in range(50)))
    clock.now += 0.9
    cached = await readiness.ready()
    store.down = True
    clock.now += 0.2
    after = await asyncio.gather(*(readiness.ready() for _ in range(50)))

    assert first == [True] * 50
    assert cached
    assert after == [False] * 50
    assert store.pings == 2


async def test_a_call_that_found_the_store_down_marks_it_down_until_a_probe_finds_it_back() -> None:
    store, clock = Store(), Clock()
    readiness = Readiness(store.ping, clock=clock)
    assert await readiness.ready()

    readiness.mark_down()
    marked = await readiness.ready()
    clock.now += 1.0
    probed = await readiness.ready()

    assert not marked
    assert probed
    assert store.pings == 2


async def test_changes_are_sent_as_they_happen() -> None:
    store, clock = Store(), Clock()
    readiness = Readiness(store.ping, fresh_for=0.05, clock=clock)  # watchers look again every 0.05 s
    changes = readiness.changes()
    seen = [await anext(changes)]

    store.down, clock.now = True, clock.now + 1
    seen.append(await asyncio.wait_for(anext(changes), timeout=10))
    store.down, clock.now = False, clock.now + 1
    seen.append(await asyncio.wait_for(anext(changes), timeout=10))
    readiness.mark_down()
    seen.append(await asyncio.wait_for(anext(changes), timeout=10))
    await changes.aclose()

    assert seen == [True, False, True, False]
