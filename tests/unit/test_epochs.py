"""The store's epoch in the use cases, on the memory store: every cursor carries it; a cursor
(ListChanges, WatchChanges) or a ListItems page token of another epoch is CursorExpired with
the current one, so its client starts over; a client that sends no epoch is answered as before
epochs; a cursor of 0 is always accepted, whatever was purged."""

from __future__ import annotations

import asyncio
import re

import pytest

from tests.actors import OPERATOR
from tests.unit.test_sync import SEEDED, STEP, ids, next_of, watching_platform
from tests.unit.test_vault_items import VAULT, caller, content
from tests.world import FakeClock, World
from zkplatform.domain.errors import CursorAhead, CursorExpired
from zkplatform.domain.models import new_epoch


async def rotate(world: World) -> str:
    return await world.platform.store.rotate_epoch(OPERATOR)


async def test_every_cursor_carries_the_stores_epoch(world: World) -> None:
    bob = await caller(world, "bob")
    epoch = await world.platform.store.epoch()

    assert re.fullmatch("[0-9a-f]{32}", epoch)  # the form new_epoch makes; opaque to clients
    assert new_epoch() != epoch
    assert (await world.platform.vault.list_items(bob, VAULT, 0, "", False)).epoch == epoch
    assert (await world.platform.sync.list_changes(bob, VAULT, 0, 0)).epoch == epoch
    assert await world.platform.vault.epoch() == epoch  # what a change's answer carries


async def test_a_cursor_of_another_epoch_is_expired_whatever_its_sequence(world: World) -> None:
    bob = await caller(world, "bob")
    before = await world.platform.sync.list_changes(bob, VAULT, 0, 0)
    after = await rotate(world)

    for since in (0, SEEDED, SEEDED + 1):  # even a cursor ahead of the vault: the epoch is checked first
        with pytest.raises(CursorExpired) as expired:
            await world.platform.sync.list_changes(bob, VAULT, since, 0, before.epoch)
        assert (expired.value.epoch, expired.value.min_sequence) == (after, None)
    assert (await world.platform.sync.list_changes(bob, VAULT, SEEDED, 0, after)).epoch == after


async def test_a_client_that_sends_no_epoch_is_answered_as_before(world: World) -> None:
    bob = await caller(world, "bob")
    await rotate(world)

    listed = await world.platform.sync.list_changes(bob, VAULT, 4, 0)

    assert (ids(listed), listed.cursor) == ([("item-5", 5), ("item-6", 6)], 6)
    with pytest.raises(CursorAhead):
        await world.platform.sync.list_changes(bob, VAULT, SEEDED + 1, 0)


async def test_a_page_token_of_before_a_rotation_is_expired(world: World) -> None:
    bob = await caller(world, "bob")
    first = await world.platform.vault.list_items(bob, VAULT, 2, "", False)
    after = await rotate(world)

    with pytest.raises(CursorExpired) as expired:
        await world.platform.vault.list_items(bob, VAULT, 2, first.next_page_token, False)
    assert expired.value.epoch == after
    again = await world.platform.vault.list_items(bob, VAULT, 2, "", False)
    following = await world.platform.vault.list_items(bob, VAULT, 2, again.next_page_token, False)
    assert (again.epoch, following.epoch) == (after, after)
    assert [i.item_id for i in following.items] == ["item-3", "item-4"]


async def test_a_cursor_of_0_is_accepted_after_a_purge(world: World, clock: FakeClock) -> None:
    """0 is "from the start": everything that exists, which a purge cannot have hidden anything from."""
    bob = await caller(world, "bob")
    await world.platform.vault.delete_item(bob, VAULT, "item-3", 1)  # 7
    clock.advance(10)
    await world.platform.store.purge_tombstones(clock.now, OPERATOR)
    epoch = await world.platform.store.epoch()

    for since_epoch in ("", epoch):
        listed = await world.platform.sync.list_changes(bob, VAULT, 0, 0, since_epoch)
        assert ids(listed) == [(f"item-{n}", n) for n in (1, 2, 4, 5, 6)]
        assert (listed.cursor, listed.has_more) == (SEEDED, False)  # the purged delete's 7 is gone with it
    with pytest.raises(CursorExpired) as expired:
        await world.platform.sync.list_changes(bob, VAULT, 1, 0)
    assert (expired.value.min_sequence, expired.value.epoch) == (7, epoch)
    watch = world.platform.sync.watch_changes(bob, VAULT, 0)
    try:
        assert len((await next_of(watch)).changes) == 5
    finally:
        await watch.aclose()


async def test_a_watch_from_a_cursor_of_another_epoch_is_refused(world: World) -> None:
    bob = await caller(world, "bob")
    old = await world.platform.store.epoch()
    new = await rotate(world)

    with pytest.raises(CursorExpired) as expired:
        await anext(world.platform.sync.watch_changes(bob, VAULT, SEEDED, old))
    assert expired.value.epoch == new
    assert world.platform.sync.slots.total == 0
    watch = world.platform.sync.watch_changes(bob, VAULT, 4, new)
    try:
        first = await next_of(watch)
        assert (ids(first), first.epoch) == ([("item-5", 5), ("item-6", 6)], new)
    finally:
        await watch.aclose()


async def test_a_watch_without_an_epoch_takes_the_stores(world: World) -> None:
    bob = await caller(world, "bob")
    watch = world.platform.sync.watch_changes(bob, VAULT, 4)
    try:
        assert (await next_of(watch)).epoch == await world.platform.store.epoch()
    finally:
        await watch.aclose()


async def test_a_rotation_under_an_open_watch_ends_it_within_a_heartbeat_period(clock: FakeClock) -> None:
    """A restore while the servers run (which the procedure avoids): the watch's cursor belongs to
    the history the restore undid, so its client is told to start over, even on a quiet vault."""
    world = await World.seed(watching_platform(clock, heartbeat_seconds=0.05))
    bob = await caller(world, "bob")
    watch = world.platform.sync.watch_changes(bob, VAULT, SEEDED)
    try:
        heartbeat = await next_of(watch)
        assert (heartbeat.changes, heartbeat.epoch) == ((), await world.platform.store.epoch())
        new = await rotate(world)

        async def until_it_ends() -> None:
            while True:
                await asyncio.wait_for(anext(watch), STEP)

        with pytest.raises(CursorExpired) as expired:
            await until_it_ends()
        assert expired.value.epoch == new
    finally:
        await watch.aclose()
    assert world.platform.sync.slots.total == 0


async def test_a_change_after_a_rotation_ends_a_watch_of_the_old_epoch(world: World) -> None:
    """With heartbeats an hour apart, the next change is what finds the new epoch."""
    bob = await caller(world, "bob")
    watch = world.platform.sync.watch_changes(bob, VAULT, 4)
    try:
        await next_of(watch)
        pending = asyncio.ensure_future(next_of(watch))
        await rotate(world)
        await world.platform.vault.create_item(bob, VAULT, "new-1", content())
        with pytest.raises(CursorExpired):
            await pending
    finally:
        await watch.aclose()
