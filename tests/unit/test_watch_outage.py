"""A watch ends with StoreUnavailable as soon as the store is known down, whether it waits for
changes or reads the store, and a read stuck on a network that drops packets does not hold it
(domain/readiness.py tells the change feed, which flags every watch of the worker)."""

from __future__ import annotations

import asyncio

import pytest

from tests.unit.test_sync import SEEDED, STEP, next_of
from tests.unit.test_vault_items import VAULT, caller, content
from tests.world import PEPPER, FakeClock, World
from zkplatform.domain.errors import StoreUnavailable
from zkplatform.domain.models import ChangePage
from zkplatform.domain.sync import WatchPolicy
from zkplatform.store.memory import MemoryStore
from zkplatform.wiring import Platform


class FailingStore(MemoryStore):
    """A memory store that can be taken down (its ping fails) and whose change reads can hang,
    as a database's do behind a network that drops packets."""

    def __init__(self) -> None:
        super().__init__()
        self.down = False
        self.reads_hang = False
        self.reads_started = asyncio.Event()
        self.reads_released = asyncio.Event()

    async def ping(self) -> None:
        if self.down:
            raise StoreUnavailable

    async def list_changes(self, vault_id: str, since: int, limit: int) -> ChangePage:
        if self.reads_hang:
            self.reads_started.set()
            await self.reads_released.wait()
        return await super().list_changes(vault_id, since, limit)


@pytest.fixture
async def failing(clock: FakeClock) -> tuple[World, FailingStore]:
    store = FailingStore()
    platform = Platform.build(store, PEPPER, clock, watch_policy=WatchPolicy(heartbeat_seconds=3600))
    return await World.seed(platform), store


async def test_a_waiting_watch_ends_once_the_store_is_known_down(failing: tuple[World, FailingStore]) -> None:
    world, store = failing
    watches = [world.platform.sync.watch_changes(await caller(world, "bob"), VAULT, SEEDED) for _ in range(3)]
    try:
        for watch in watches:
            assert (await next_of(watch)).caught_up
        waiting = [asyncio.ensure_future(next_of(watch)) for watch in watches]
        store.down = True
        world.platform.readiness.mark_down()  # a call found it down; the probe confirms it
        ends = await asyncio.gather(*waiting, return_exceptions=True)
    finally:
        for watch in watches:
            await watch.aclose()

    assert [type(end) for end in ends] == [StoreUnavailable] * 3
    assert world.platform.sync.slots.total == 0


async def test_a_watch_stuck_in_a_read_ends_once_the_store_is_known_down(failing: tuple[World, FailingStore]) -> None:
    world, store = failing
    bob = await caller(world, "bob")
    watch = world.platform.sync.watch_changes(bob, VAULT, SEEDED)
    try:
        assert (await next_of(watch)).caught_up
        pending = asyncio.ensure_future(next_of(watch))
        store.reads_hang = True
        await world.platform.vault.create_item(bob, VAULT, "new-1", content())  # wakes the watch: it reads
        await asyncio.wait_for(store.reads_started.wait(), STEP)
        store.down = True
        world.platform.readiness.mark_down()
        with pytest.raises(StoreUnavailable):
            await pending
    finally:
        await watch.aclose()
        store.reads_released.set()  # the abandoned read ends by itself


async def test_a_watch_opened_while_the_store_is_known_down_ends_at_once(failing: tuple[World, FailingStore]) -> None:
    world, store = failing
    bob = await caller(world, "bob")
    told = asyncio.Event()
    world.platform.readiness.on_down(told.set)
    store.down = True
    world.platform.readiness.mark_down()
    await asyncio.wait_for(told.wait(), STEP)

    with pytest.raises(StoreUnavailable):
        await next_of(world.platform.sync.watch_changes(bob, VAULT, SEEDED))
