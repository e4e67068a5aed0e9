"""A quiet watch ends at once when its token is revoked or its caller leaves the vault, made
by this worker or by another process on the same database (an operator's command), on
every store alike: the heartbeat period here is ten minutes, so only the feed's wake-up
can end the watch within the test's bound."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable

import pytest

from tests.actors import OPERATOR
from tests.contract.test_item_changes import new
from tests.store.stores import closing
from tests.unit.test_vault_items import VAULT, caller
from tests.world import PEPPER, FakeClock, World
from zkplatform.domain.auth import Caller
from zkplatform.domain.errors import PermissionDenied, ScopeMissing, TokenRevoked, Unauthenticated, VaultAccessDenied
from zkplatform.domain.models import Scope, ScopeChange, ScopeEdit
from zkplatform.domain.sync import ListedChanges, WatchPolicy
from zkplatform.store import MigratableStore, open_store
from zkplatform.wiring import Platform

HEARTBEAT = 600.0  # seconds: longer than any wait below, so no heartbeat re-check ends a watch
ENDS_WITHIN = 20.0  # seconds: bounds a failure; the wake-up comes within a poll interval (0.2 s)
SEEDED = 6  # the development vault's items
READ = frozenset({Scope.VAULT_ITEMS_READ})

Change = Callable[[MigratableStore, Caller], Awaitable[object]]


@pytest.fixture
async def world(store: MigratableStore, clock: FakeClock) -> World:
    policy = WatchPolicy(heartbeat_seconds=HEARTBEAT)
    return await World.seed(Platform.build(store, PEPPER, clock, watch_policy=policy))


@pytest.fixture(params=["this store", "another store"])
async def writer(
    request: pytest.FixtureRequest, store: MigratableStore, world: World
) -> AsyncIterator[MigratableStore]:
    """What makes the change: the watch's own store (this worker), or another store on the same
    database, which stands for another worker, host or an operator's command."""
    if request.param == "this store":
        yield store
        return
    match request.node.callspec.params["store"]:
        case "memory":
            pytest.skip("a memory store is one process's own")
        case "sqlite":
            url = f"sqlite:///{getattr(store, '_path')}"  # noqa: B009 # the contract's stores have no URL of their own
        case _:
            url = request.getfixturevalue("postgres_url")
    async with closing(open_store(url)) as other:
        yield other


async def live_watch(world: World, bob: Caller) -> AsyncGenerator[ListedChanges, None]:
    """Bob's watch of the vault, past its backlog: from here on it only waits."""
    watch = world.platform.sync.watch_changes(bob, VAULT, 0)
    backlog = await asyncio.wait_for(anext(watch), ENDS_WITHIN)
    assert len(backlog.changes) == SEEDED
    return watch


async def end_of(watch: AsyncGenerator[ListedChanges, None]) -> tuple[list[ListedChanges], BaseException]:
    """What the watch sends until it ends, and how it ends; bounded, so a watch that is never
    woken fails here instead of at its heartbeat."""
    sent: list[ListedChanges] = []
    try:
        async with asyncio.timeout(ENDS_WITHIN):
            while True:
                sent.append(await anext(watch))
    except (Unauthenticated, PermissionDenied) as error:
        return sent, error
    finally:
        await watch.aclose()


async def revoke(store: MigratableStore, bob: Caller) -> object:
    return await store.revoke_token_tree(bob.token.token_id, OPERATOR)


async def disable(store: MigratableStore, _: Caller) -> object:
    return await store.set_principal_disabled("bob", OPERATOR, disabled=True)


async def remove(store: MigratableStore, _: Caller) -> object:
    return await store.remove_vault_member(VAULT, "bob", OPERATOR)


async def narrow(store: MigratableStore, _: Caller) -> object:
    """An operator takes vault.items.read from bob: his token still holds it, but a call's scopes
    are the token's within the principal's."""
    return await store.change_principal_scopes("acme", "bob", ScopeChange(ScopeEdit.REMOVE, READ), OPERATOR)


@pytest.mark.parametrize(
    ("change", "ending"),
    [
        (revoke, TokenRevoked()),
        (disable, TokenRevoked()),
        (remove, VaultAccessDenied()),
        (narrow, ScopeMissing(Scope.VAULT_ITEMS_READ)),
    ],
    ids=["token revoked", "principal disabled", "member removed", "scope removed"],
)
async def test_a_quiet_watch_ends_at_once_when_its_access_goes(
    world: World, writer: MigratableStore, change: Change, ending: Exception
) -> None:
    bob = await caller(world, "bob")
    watch = await live_watch(world, bob)
    pending = asyncio.ensure_future(end_of(watch))

    await change(writer, bob)

    sent, ended = await pending
    assert sent == []
    assert (type(ended), str(ended)) == (type(ending), str(ending))


@pytest.mark.parametrize("change", [revoke, remove, narrow], ids=["token revoked", "member removed", "scope removed"])
async def test_a_change_committed_after_the_access_went_is_never_sent(
    world: World, writer: MigratableStore, change: Change
) -> None:
    bob = await caller(world, "bob")
    watch = await live_watch(world, bob)
    pending = asyncio.ensure_future(end_of(watch))

    await change(writer, bob)
    await writer.create_item(new("after", vault_id=VAULT, tenant_id="acme"), OPERATOR)

    sent, ended = await pending
    assert sent == []
    assert isinstance(ended, Unauthenticated if change is revoke else PermissionDenied)


async def test_a_watch_goes_on_when_its_principal_loses_another_scope(world: World, writer: MigratableStore) -> None:
    bob = await caller(world, "bob")
    watch = await live_watch(world, bob)
    try:
        await writer.change_principal_scopes(
            "acme", "bob", ScopeChange(ScopeEdit.REMOVE, frozenset({Scope.VAULT_ITEMS_WRITE})), OPERATOR
        )
        await writer.create_item(new("after", vault_id=VAULT, tenant_id="acme"), OPERATOR)

        sent = await asyncio.wait_for(anext(watch), ENDS_WITHIN)
    finally:
        await watch.aclose()

    assert [change.item.item_id for change in sent.changes] == ["after"]
