"""Readiness: one probe of the store answers every health check for a second, and no check
waits for one longer than its bound; a call that found the store down marks it down at once,
until a probe finds it back; calls are refused while it is known down, never delayed while it
is up; changes reach whoever watches."""

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

    store.down = True
    readiness.mark_down()  # and a probe, which confirms it
    marked = await readiness.ready()
    store.down = False
    cached = await readiness.ready()  # the confirmation's answer stands for a second
    clock.now += 1.0
    probed = await readiness.ready()

    assert not marked
    assert not cached
    assert probed
    assert store.pings == 3


async def test_a_call_that_found_a_store_down_that_answers_others_is_ready_again_after_the_probe() -> None:
    """SQLite's write lock held past the busy timeout by another process: the call answered
    unavailable, but the file reads, so the probe that follows the mark clears it."""
    store, clock = Store(), Clock()
    readiness = Readiness(store.ping, clock=clock)
    assert await readiness.ready()

    readiness.mark_down()
    during = await readiness.refuses()  # waits for the probe that follows the mark
    after = await readiness.ready()

    assert not during
    assert after
    assert store.pings == 2


async def test_a_probe_begun_before_a_call_found_the_store_down_cannot_clear_it() -> None:
    gate, clock = asyncio.Event(), Clock()
    pings = 0

    async def slow_ping() -> None:
        nonlocal pings
        pings += 1
        await gate.wait()  # answers once the call below has found the store down

    readiness = Readiness(slow_ping, clock=clock, answer_within=60)
    begun = asyncio.ensure_future(readiness.ready())
    for _ in range(100):  # until the probe's ping is under way (bounded)
        if pings:
            break
        await asyncio.sleep(0)
    readiness.mark_down()
    gate.set()
    first = await begun
    marked = await readiness.refuses()

    assert not first
    assert marked  # fresh from the call's mark, no probe begun after it: refused at once
    assert pings == 1


async def test_a_check_waits_for_a_probe_at_most_answer_within_then_the_last_answer_stands() -> None:
    """A probe that takes its whole bound (a database that does not answer: PING_TIMEOUT, 2 s)
    must not hold a load balancer's check past its own timeout."""
    hung, clock = asyncio.Event(), Clock()

    async def hung_ping() -> None:
        await hung.wait()

    readiness = Readiness(hung_ping, clock=clock, answer_within=0.05)
    clock.now += 5  # stale: the next check probes

    started = asyncio.get_running_loop().time()
    answers = await asyncio.gather(*(readiness.ready() for _ in range(10)))
    waited = asyncio.get_running_loop().time() - started
    hung.set()

    assert answers == [True] * 10  # the last answer (from the store's opening), not a timeout
    assert waited < 2.0  # 0.05 s in practice; far below a hung probe's


async def test_calls_never_wait_while_the_store_is_up_and_are_refused_at_once_while_it_is_known_down() -> None:
    store, clock = Store(), Clock()
    readiness = Readiness(store.ping, clock=clock)

    clock.now += 5  # stale: a check would probe; a call does not
    up = [await readiness.refuses() for _ in range(3)]
    pings_while_up = store.pings
    store.down = True
    readiness.mark_down()
    down = [await readiness.refuses() for _ in range(3)]  # the mark's probe, then its fresh answer
    pings_while_down = store.pings
    readiness.mark_down()  # another call refused: nothing new
    again = store.pings
    clock.now += 1.0
    store.down = False
    back = await readiness.refuses()  # stale: probed again, and found back

    assert up == [False] * 3
    assert pings_while_up == 0
    assert down == [True] * 3
    assert pings_while_down == 1
    assert again == 1
    assert not back
    assert store.pings == 2


async def test_on_down_is_called_once_the_store_is_known_down_and_not_for_a_mark_a_probe_clears() -> None:
    store, clock = Store(), Clock()
    readiness = Readiness(store.ping, clock=clock)
    told = asyncio.Event()
    readiness.on_down(told.set)

    readiness.mark_down()  # the store answers: the probe clears it
    await asyncio.sleep(0.05)
    after_a_cleared_mark = (told.is_set(), readiness.known_down)
    store.down = True
    readiness.suspect()  # a connection to the store ended: probed now, though the answer is fresh
    await asyncio.wait_for(told.wait(), timeout=10)
    known = readiness.known_down
    store.down, clock.now = False, clock.now + 1
    back = await readiness.ready()

    assert after_a_cleared_mark == (False, False)
    assert known
    assert back
    assert not readiness.known_down
    assert store.pings == 3


async def test_on_down_is_called_for_a_mark_the_probe_does_not_clear_within_its_bound() -> None:
    """A probe that hangs (a network that drops packets): the mark stands after ANSWER_WITHIN."""
    ping_sent, released = asyncio.Event(), asyncio.Event()

    async def hung_ping() -> None:
        ping_sent.set()
        await released.wait()

    readiness = Readiness(hung_ping, clock=Clock(), answer_within=0.05)
    told = asyncio.Event()
    readiness.on_down(told.set)

    readiness.mark_down()
    await asyncio.wait_for(told.wait(), timeout=10)
    released.set()

    assert ping_sent.is_set()
    assert readiness.known_down


async def test_changes_are_sent_as_they_happen() -> None:
    store, clock = Store(), Clock()
    readiness = Readiness(store.ping, fresh_for=0.05, clock=clock)  # watchers look again every 0.05 s
    changes = readiness.changes()
    seen = [await anext(changes)]

    store.down, clock.now = True, clock.now + 1
    seen.append(await asyncio.wait_for(anext(changes), timeout=10))
    store.down, clock.now = False, clock.now + 1
    seen.append(await asyncio.wait_for(anext(changes), timeout=10))
    store.down = True
    readiness.mark_down()
    seen.append(await asyncio.wait_for(anext(changes), timeout=10))
    await changes.aclose()

    assert seen == [True, False, True, False]
