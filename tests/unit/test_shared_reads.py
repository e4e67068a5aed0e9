"""Shared reads (domain/shared_reads.py): the watches of a vault woken by one change read its
page and its membership once between them, and a watch woken again after a read started is not
served by it (a page older than the change that woke it would lose that change)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Callable, Collection

import pytest

from tests.rpc.test_watch_pacing import PERIOD, FakeTimer
from tests.unit.test_sync import SEEDED, next_of
from tests.unit.test_vault_items import VAULT, caller, content
from tests.world import PEPPER, FakeClock, World
from zkplatform.domain.errors import StoreUnavailable
from zkplatform.domain.models import ChangePage, Principal, Scope, TokenRecord, Vault
from zkplatform.domain.shared_reads import BatchedReads, SharedReads
from zkplatform.domain.sync import ListedChanges, WatchPolicy
from zkplatform.store.memory import MemoryStore
from zkplatform.wiring import Platform

LOOP_TURNS = 100  # bounds a wait for something that takes a few turns of the event loop


class CountingStore(MemoryStore):
    """A memory store that counts its change, vault and token reads, and can hold its change reads
    (each answers the store as it was when the read began, as a database's snapshot does)."""

    def __init__(self) -> None:
        super().__init__()
        self.change_reads = 0
        self.vault_reads = 0
        self.token_reads: list[Collection[str]] = []
        self.epoch_reads = 0
        self.epochs_held = False
        self.held = False
        self.released = asyncio.Event()

    async def list_changes(self, vault_id: str, since: int, limit: int) -> ChangePage:
        self.change_reads += 1
        page = await super().list_changes(vault_id, since, limit)
        if self.held:
            await self.released.wait()
        return page

    async def get_vault(self, vault_id: str) -> Vault | None:
        self.vault_reads += 1
        return await super().get_vault(vault_id)

    async def epoch(self) -> str:
        self.epoch_reads += 1
        if self.epochs_held:
            await self.released.wait()
        return await super().epoch()

    async def get_tokens_with_principals(self, token_ids: Collection[str]) -> dict[str, tuple[TokenRecord, Principal]]:
        self.token_reads.append(list(token_ids))
        return await super().get_tokens_with_principals(token_ids)


@pytest.fixture
async def counted(clock: FakeClock) -> tuple[World, CountingStore]:
    store = CountingStore()
    platform = Platform.build(store, PEPPER, clock, watch_policy=WatchPolicy(heartbeat_seconds=3600))
    return await World.seed(platform), store


def ids(listed: ListedChanges) -> list[int]:
    return [change.sequence for change in listed.changes]


async def test_one_change_costs_one_page_read_and_one_vault_read_for_all_its_watches(
    counted: tuple[World, CountingStore],
) -> None:
    world, store = counted
    bob = await caller(world, "bob")
    watches = [world.platform.sync.watch_changes(bob, VAULT, SEEDED) for _ in range(5)]
    reads_before: list[int] = []
    live = await after_one_change(world, watches, lambda: reads_before.extend((store.change_reads, store.vault_reads)))

    assert [ids(listed) for listed in live] == [[SEEDED + 1]] * 5
    assert (store.change_reads - reads_before[0], store.vault_reads - reads_before[1]) == (1, 1)


async def after_one_change(
    world: World, watches: list[AsyncGenerator[ListedChanges, None]], mark: Callable[[], object]
) -> list[ListedChanges]:
    """What each watch sends once it has sent its caught-up marker and waits, and bob creates an
    item: `mark` is called after the create, which suspends nowhere (no watch has run yet)."""
    try:
        for watch in watches:
            assert (await next_of(watch)).caught_up
        pending = [asyncio.ensure_future(next_of(watch)) for watch in watches]
        for _ in range(LOOP_TURNS):  # every watch waits for a change
            await asyncio.sleep(0)
        await world.platform.vault.create_item(await caller(world, "bob"), VAULT, "new-1", content())
        mark()
        return await asyncio.gather(*pending)
    finally:
        for watch in watches:
            await watch.aclose()


async def test_a_watch_woken_after_a_read_began_is_not_served_by_it(counted: tuple[World, CountingStore]) -> None:
    world, store = counted
    bob = await caller(world, "bob")
    first, second = (world.platform.sync.watch_changes(bob, VAULT, SEEDED) for _ in range(2))
    try:
        assert (await next_of(first)).caught_up
        assert (await next_of(second)).caught_up
        store.held, reads_before = True, store.change_reads
        reading = asyncio.ensure_future(next_of(first))
        for _ in range(LOOP_TURNS):  # the first watch waits
            await asyncio.sleep(0)
        await world.platform.vault.create_item(bob, VAULT, "new-1", content())  # 7: the first reads, held
        for _ in range(LOOP_TURNS):
            if store.change_reads > reads_before:
                break
            await asyncio.sleep(0)
        reads_of_7 = store.change_reads - reads_before
        await world.platform.vault.create_item(bob, VAULT, "new-2", content())  # 8, after that read began
        woken_after = asyncio.ensure_future(next_of(second))  # woken by 7 and 8: asks now
        for _ in range(LOOP_TURNS):
            if store.change_reads - reads_before > reads_of_7:
                break
            await asyncio.sleep(0)
        store.released.set()
        seen_first, seen_second = await reading, await woken_after
    finally:
        store.released.set()
        await first.aclose()
        await second.aclose()

    assert reads_of_7 == 1
    assert ids(seen_first) == [SEEDED + 1]  # its read began before 8
    assert ids(seen_second) == [SEEDED + 1, SEEDED + 2]  # a read of its own: 8 is not lost


async def test_a_read_is_shared_only_while_it_runs_and_each_asker_may_leave_it() -> None:
    shared = SharedReads()
    calls: list[int] = []
    answer: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    async def read() -> int:
        calls.append(1)
        return await answer

    leaving, staying = shared.read("key", read), shared.read("key", read)
    other = shared.read("other key", read)
    await asyncio.sleep(0)
    leaving.cancel()  # its asker ended: the read goes on for the other
    answer.set_result(7)
    got = (await staying, await other)
    again = await shared.read("key", read)  # after it ended: a read of its own

    assert got == (7, 7)
    assert again == 7
    assert len(calls) == 3


async def test_the_tokens_asked_for_in_one_step_are_read_at_once() -> None:
    reads: list[list[str]] = []

    async def read_many(keys: Collection[str]) -> dict[str, int]:
        reads.append(sorted(keys))
        return {key: len(key) for key in keys if key != "missing"}

    batched: BatchedReads[str, int] = BatchedReads(read_many)
    together = [batched.read(key) for key in ("a", "bb", "a", "missing")]
    leaving = batched.read("ccc")
    leaving.cancel()  # its asker ended: the others are answered all the same
    answers = await asyncio.gather(*together)
    later = await batched.read("dddd")  # asked after that read began: a read of its own

    assert answers == [1, 2, 1, None]
    assert later == 4
    assert reads == [["a", "bb", "ccc", "missing"], ["dddd"]]


async def test_a_failed_batch_fails_each_of_its_askers() -> None:
    async def read_many(keys: Collection[str]) -> dict[str, int]:
        raise StoreUnavailable

    batched: BatchedReads[str, int] = BatchedReads(read_many)
    outcomes = await asyncio.gather(batched.read("a"), batched.read("b"), return_exceptions=True)

    assert [type(outcome) for outcome in outcomes] == [StoreUnavailable, StoreUnavailable]


async def test_the_watches_woken_by_one_change_read_their_tokens_at_once(clock: FakeClock) -> None:
    store = CountingStore()
    platform = Platform.build(store, PEPPER, clock, watch_policy=WatchPolicy(heartbeat_seconds=3600))
    world = await World.seed(platform)
    readers = [await caller(world, "bob", [Scope.VAULT_ITEMS_READ]) for _ in range(5)]  # a token each
    watches = [platform.sync.watch_changes(reader, VAULT, SEEDED) for reader in readers]
    await after_one_change(world, watches, store.token_reads.clear)

    assert [sorted(read) for read in store.token_reads] == [sorted(reader.token.token_id for reader in readers)]


async def test_heartbeats_due_while_an_epoch_read_runs_share_it(clock: FakeClock) -> None:
    """On a database, heartbeats that come due together would each wait for a connection to
    read the same row; they share the one in flight instead."""
    store, timer = CountingStore(), FakeTimer()
    policy = WatchPolicy(heartbeat_seconds=PERIOD)
    platform = Platform.build(store, PEPPER, clock, watch_policy=policy, watch_timer=timer)
    world = await World.seed(platform)
    watches = [platform.sync.watch_changes(await caller(world, "bob"), VAULT, SEEDED) for _ in range(3)]
    try:
        for watch in watches:
            assert (await next_of(watch)).caught_up
        beats = [asyncio.ensure_future(next_of(watch)) for watch in watches]
        for _ in watches:
            await timer.next_wait()  # each watch waits for its heartbeat
        store.epochs_held, reads_before = True, store.epoch_reads
        timer.advance(PERIOD)
        for _ in range(LOOP_TURNS):  # every watch, due, asks for the epoch
            await asyncio.sleep(0)
        reads_while_held = store.epoch_reads - reads_before
        store.released.set()
        heartbeats = await asyncio.gather(*beats)
    finally:
        store.released.set()
        for watch in watches:
            await watch.aclose()

    assert reads_while_held == 1
    assert [(listed.changes, listed.caught_up) for listed in heartbeats] == [((), False)] * 3
