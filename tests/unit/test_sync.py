"""ListChanges and WatchChanges use cases on the memory store: the order of checks, paging,
cursors past a purge or beyond the vault, and a watch from its backlog to live changes,
heartbeats, re-checks, limits and a slow reader."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator

import pytest

from tests.actors import OPERATOR
from tests.unit.test_vault_items import VAULT, caller, content, replacing
from tests.world import PEPPER, FakeClock, World
from zkplatform.domain.auth import Caller
from zkplatform.domain.errors import (
    CursorAhead,
    CursorExpired,
    InvalidArgument,
    LimitReached,
    PermissionDenied,
    Unauthenticated,
    WatchBehind,
)
from zkplatform.domain.models import Scope
from zkplatform.domain.sync import ListedChanges, SyncUseCases, WatchPolicy
from zkplatform.store.memory import MemoryStore
from zkplatform.wiring import Platform

STEP = 5.0  # seconds: bounds each wait for a message that must come (it comes at once)
SEEDED = 6  # the development vault's items: sequences 1..6


def watching_platform(clock: FakeClock, **policy: float) -> Platform:
    return Platform.build(MemoryStore(), PEPPER, clock, watch_policy=WatchPolicy(**policy))  # type: ignore[arg-type]


@pytest.fixture
def platform(clock: FakeClock) -> Platform:
    return watching_platform(clock, heartbeat_seconds=3600)


def ids(listed: ListedChanges) -> list[tuple[str, int]]:
    return [(c.item.item_id, c.sequence) for c in listed.changes]


async def next_of(watch: AsyncGenerator[ListedChanges, None]) -> ListedChanges:
    return await asyncio.wait_for(anext(watch), STEP)


# ListChanges


async def test_changes_page_by_page_with_the_cursor_of_the_last_change(world: World) -> None:
    bob = await caller(world, "bob")
    sync = world.platform.sync

    first = await sync.list_changes(bob, VAULT, 0, 4)
    rest = await sync.list_changes(bob, VAULT, first.cursor, 4)
    after = await sync.list_changes(bob, VAULT, rest.cursor, 4)

    assert (ids(first), first.cursor, first.has_more) == ([(f"item-{n}", n) for n in range(1, 5)], 4, True)
    assert (ids(rest), rest.cursor, rest.has_more) == ([("item-5", 5), ("item-6", 6)], 6, False)
    assert after == ListedChanges((), 6, has_more=False, epoch=await world.platform.store.epoch())


async def test_an_item_changed_twice_comes_once_in_its_latest_state(world: World) -> None:
    bob = await caller(world, "bob")
    vault = world.platform.vault
    await vault.update_item(bob, VAULT, "item-2", 1, replacing("b"))  # 7
    await vault.delete_item(bob, VAULT, "item-2", 2)  # 8

    listed = await world.platform.sync.list_changes(bob, VAULT, 0, 0)

    assert ids(listed)[-1] == ("item-2", 8)
    assert [i for i, _ in ids(listed)].count("item-2") == 1
    assert listed.changes[-1].item.deleted


async def test_a_page_size_of_0_means_100_and_more_than_1000_means_1000(world: World, clock: FakeClock) -> None:
    """AIP-158: a larger page size is coerced down, never refused; only a negative one is."""
    bob = await caller(world, "bob")
    more = [content(f"{n}").new_item(f"more-{n:04}", "acme", VAULT, clock.now) for n in range(1000)]
    await world.platform.store.add_items(more, OPERATOR)

    default = await world.platform.sync.list_changes(bob, VAULT, 0, 0)
    largest = await world.platform.sync.list_changes(bob, VAULT, 0, 5000)

    assert (len(default.changes), default.has_more) == (100, True)
    assert (len(largest.changes), largest.has_more, largest.cursor) == (1000, True, 1000)
    with pytest.raises(InvalidArgument, match="pageSize"):
        await world.platform.sync.list_changes(bob, VAULT, 0, -1)
    with pytest.raises(InvalidArgument, match="sinceSequence"):
        await world.platform.sync.list_changes(bob, VAULT, -1, 0)


async def test_a_cursor_below_the_purge_horizon_has_expired(world: World, clock: FakeClock) -> None:
    bob = await caller(world, "bob")
    await world.platform.vault.delete_item(bob, VAULT, "item-3", 1)  # 7
    await world.platform.vault.update_item(bob, VAULT, "item-4", 1, replacing("b"))  # 8
    clock.advance(10)
    await world.platform.store.purge_tombstones(clock.now, OPERATOR)

    with pytest.raises(CursorExpired) as expired:
        await world.platform.sync.list_changes(bob, VAULT, 6, 0)
    assert expired.value.min_sequence == 7
    assert ids(await world.platform.sync.list_changes(bob, VAULT, 7, 0)) == [("item-4", 8)]


async def test_a_cursor_beyond_the_vault_is_ahead(world: World) -> None:
    bob = await caller(world, "bob")
    with pytest.raises(CursorAhead) as ahead:
        await world.platform.sync.list_changes(bob, VAULT, SEEDED + 1, 0)
    assert ahead.value.current_sequence == SEEDED


async def test_the_scope_is_checked_first_then_the_membership_then_the_cursor(world: World) -> None:
    no_read = await caller(world, "bob", [Scope.VAULT_ITEMS_WRITE])
    with pytest.raises(PermissionDenied, match=r"vault\.items\.read"):
        await world.platform.sync.list_changes(no_read, "acme-private", 10**9, 5000)
    bob = await caller(world, "bob")
    for vault_id in ("acme-private", "globex-main", "no-such-vault"):
        with pytest.raises(PermissionDenied, match="not a member"):
            await world.platform.sync.list_changes(bob, vault_id, 10**9, 5000)


# WatchChanges


async def test_a_watch_sends_its_backlog_then_each_change_as_it_commits(world: World) -> None:
    bob = await caller(world, "bob")
    watch = world.platform.sync.watch_changes(bob, VAULT, 4)
    try:
        assert ids(await next_of(watch)) == [("item-5", 5), ("item-6", 6)]
        pending = asyncio.ensure_future(next_of(watch))
        await world.platform.vault.create_item(bob, VAULT, "new-1", content())
        live = await pending
        assert (ids(live), live.cursor) == ([("new-1", 7)], 7)
        deleting = asyncio.ensure_future(next_of(watch))
        await world.platform.vault.delete_item(bob, VAULT, "new-1", 1)
        assert ids(deleted := await deleting) == [("new-1", 8)]
        assert deleted.changes[0].item.deleted
    finally:
        await watch.aclose()


async def test_a_watch_opens_with_the_checks_of_list_changes(world: World) -> None:
    bob = await caller(world, "bob")
    with pytest.raises(PermissionDenied):
        await anext(world.platform.sync.watch_changes(bob, "acme-private", 0))
    with pytest.raises(CursorAhead):
        await anext(world.platform.sync.watch_changes(bob, VAULT, SEEDED + 1))
    assert world.platform.sync.slots.total == 0


async def test_a_quiet_watch_sends_heartbeats_with_its_cursor(clock: FakeClock) -> None:
    world = await World.seed(watching_platform(clock, heartbeat_seconds=0.05))
    watch = world.platform.sync.watch_changes(await caller(world, "bob"), VAULT, 0)
    try:
        epoch = await world.platform.store.epoch()
        assert len((await next_of(watch)).changes) == SEEDED
        assert await next_of(watch) == ListedChanges((), SEEDED, has_more=False, epoch=epoch)
        assert await next_of(watch) == ListedChanges((), SEEDED, has_more=False, epoch=epoch)
    finally:
        await watch.aclose()


async def ended_by(world: World, bob: Caller, change: object) -> BaseException:
    """What ends bob's live watch once `change` (a coroutine) has run."""
    watch = world.platform.sync.watch_changes(bob, VAULT, SEEDED)
    try:
        heartbeat = await next_of(watch)  # a heartbeat: live
        assert (heartbeat.changes, heartbeat.cursor, heartbeat.has_more) == ((), SEEDED, False)
        await change  # type: ignore[misc]
        while True:
            try:
                await next_of(watch)
            except (Unauthenticated, PermissionDenied) as error:
                return error
    finally:
        await watch.aclose()


@pytest.fixture
async def quick(clock: FakeClock) -> World:
    return await World.seed(watching_platform(clock, heartbeat_seconds=0.05))


async def test_a_revoked_token_ends_the_watch_unauthenticated(quick: World) -> None:
    bob = await caller(quick, "bob")
    error = await ended_by(quick, bob, quick.platform.store.revoke_token_tree(bob.token.token_id, OPERATOR))
    assert isinstance(error, Unauthenticated)
    assert str(error) == "token revoked"


async def test_an_expired_token_ends_the_watch_unauthenticated(quick: World, clock: FakeClock) -> None:
    bob = await caller(quick, "bob")

    async def expire() -> None:
        clock.advance(bob.token.expires_at - clock.now)

    error = await ended_by(quick, bob, expire())
    assert isinstance(error, Unauthenticated)
    assert str(error) == "token expired"


async def test_a_removed_member_ends_the_watch_permission_denied(quick: World) -> None:
    bob = await caller(quick, "bob")
    error = await ended_by(quick, bob, quick.platform.store.remove_vault_member(VAULT, "bob", OPERATOR))
    assert isinstance(error, PermissionDenied)


async def test_a_disabled_principal_ends_the_watch_unauthenticated(quick: World) -> None:
    bob = await caller(quick, "bob")
    error = await ended_by(quick, bob, quick.platform.store.set_principal_disabled("bob", OPERATOR, disabled=True))
    assert isinstance(error, Unauthenticated)


async def nothing_after(world: World, bob: Caller, change: object) -> BaseException:
    """What bob's live watch answers to the next change of the vault, once `change` has run.
    The heartbeat period is an hour: only the check before each page can end it."""
    watch = world.platform.sync.watch_changes(bob, VAULT, 0)
    try:
        assert len((await next_of(watch)).changes) == SEEDED  # live
        await change  # type: ignore[misc]
        pending = asyncio.ensure_future(next_of(watch))
        alice = await caller(world, "alice")
        await world.platform.vault.create_item(alice, VAULT, "after", content())
        with pytest.raises((Unauthenticated, PermissionDenied)) as ended:
            await pending
        return ended.value
    finally:
        await watch.aclose()


async def test_a_change_after_a_revocation_is_not_sent(world: World) -> None:
    bob = await caller(world, "bob")
    error = await nothing_after(world, bob, world.platform.store.revoke_token_tree(bob.token.token_id, OPERATOR))
    assert str(error) == "token revoked"


async def test_a_change_after_a_removal_from_the_vault_is_not_sent(world: World) -> None:
    bob = await caller(world, "bob")
    error = await nothing_after(world, bob, world.platform.store.remove_vault_member(VAULT, "bob", OPERATOR))
    assert isinstance(error, PermissionDenied)


async def slots_taken(sync: SyncUseCases, count: int) -> None:
    async with asyncio.timeout(STEP):
        while sync.slots.total < count:
            await asyncio.sleep(0)


async def test_watches_are_limited_per_principal_and_per_worker(clock: FakeClock) -> None:
    world = await World.seed(watching_platform(clock, heartbeat_seconds=3600, max_per_principal=2, max_per_worker=3))
    bob, alice = await caller(world, "bob"), await caller(world, "alice")
    sync = world.platform.sync
    bobs = [sync.watch_changes(bob, VAULT, SEEDED) for _ in range(3)]
    alices = [sync.watch_changes(alice, VAULT, SEEDED) for _ in range(2)]
    opened = [asyncio.ensure_future(anext(w)) for w in bobs[:2]]
    try:
        await slots_taken(sync, 2)
        with pytest.raises(LimitReached, match="the caller has 2 open watches") as per_principal:
            await anext(bobs[2])
        opened.append(asyncio.ensure_future(anext(alices[0])))
        await slots_taken(sync, 3)
        with pytest.raises(LimitReached, match="this server has 3 open watches") as per_worker:
            await anext(alices[1])
        assert (per_principal.value.retry_after_seconds, per_worker.value.retry_after_seconds) == (5, 1)
    finally:
        for pending in opened:
            pending.cancel()
        await asyncio.gather(*opened, return_exceptions=True)  # a cancelled watch gives its slot back
        for watch in (*bobs, *alices):
            await watch.aclose()
    assert sync.slots.total == 0
    again = sync.watch_changes(bob, VAULT, 0)
    assert len((await next_of(again)).changes) == SEEDED
    await again.aclose()


async def test_a_live_watch_that_falls_too_far_behind_is_told_to_resume(clock: FakeClock) -> None:
    world = await World.seed(watching_platform(clock, heartbeat_seconds=3600, max_lag=5))
    bob = await caller(world, "bob")
    watch = world.platform.sync.watch_changes(bob, VAULT, 0)
    try:
        assert len((await next_of(watch)).changes) == SEEDED  # a backlog of any length is fine
        for n in range(6):  # while the client reads nothing
            await world.platform.vault.create_item(bob, VAULT, f"new-{n}", content())
        with pytest.raises(WatchBehind):
            await next_of(watch)
    finally:
        await watch.aclose()


async def test_a_live_watch_within_its_lag_catches_up(clock: FakeClock) -> None:
    world = await World.seed(watching_platform(clock, heartbeat_seconds=3600, max_lag=5))
    bob = await caller(world, "bob")
    watch = world.platform.sync.watch_changes(bob, VAULT, 0)
    try:
        assert len((await next_of(watch)).changes) == SEEDED
        for n in range(5):
            await world.platform.vault.create_item(bob, VAULT, f"new-{n}", content())
        assert len((await next_of(watch)).changes) == 5
    finally:
        await watch.aclose()
