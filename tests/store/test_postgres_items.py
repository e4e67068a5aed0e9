"""Creates and updates racing from two pools, as from two processes: PostgreSQL's row locks decide."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

from tests.actors import OPERATOR, at
from tests.contract.test_item_changes import new, replacing
from tests.store.stores import closing
from zkplatform.domain.models import ItemChange, Principal, Role, Tenant, Vault
from zkplatform.domain.ports.items import Conflict, Created, Existing
from zkplatform.store.postgres import PostgresStore

T = TypeVar("T")
NOW = 1_800_000_000
Stores = tuple[PostgresStore, PostgresStore]


async def seed(store: PostgresStore) -> None:
    await store.add_tenant(Tenant("t1"), OPERATOR)
    await store.add_principal(Principal("p1", "t1", Role.OWNER, Role.OWNER.default_scopes), OPERATOR)
    await store.add_vault(Vault("v1", "t1", frozenset({"p1"})), OPERATOR)
    await store.add_items([new("i1"), new("i2")], OPERATOR)


async def from_both(stores: Stores, count: int, call: Callable[[PostgresStore, int], Awaitable[T]]) -> list[T]:
    """`count` calls at once, alternating between the two stores (every connection is open already)."""
    return await asyncio.gather(*(call(stores[n % 2], n) for n in range(count)))


async def test_concurrent_updates_at_one_version_make_one_change(stores: Stores) -> None:
    await seed(stores[0])

    outcomes = await from_both(
        stores, 40, lambda store, n: store.update_item("v1", "i1", 1, replacing(str(n)), at(NOW))
    )

    changes = [o for o in outcomes if isinstance(o, ItemChange)]
    assert len(changes) == 1
    (winner,) = changes
    assert (winner.item.version, winner.sequence) == (2, 3)
    assert all(o == Conflict(winner) for o in outcomes if o is not winner)
    assert await stores[1].vault_sequence("v1") == 3
    assert await stores[1].get_item("v1", "i1") == winner.item


async def test_a_chain_of_racing_updates_takes_one_number_per_version(stores: Stores) -> None:
    """Each caller retries at the version it is told until its update applies: every version
    is made exactly once, with consecutive numbers."""
    await seed(stores[0])

    async def update_until_applied(store: PostgresStore, n: int) -> ItemChange:
        base = 1
        for _ in range(100):
            match await store.update_item("v1", "i1", base, replacing(str(n)), at(NOW)):
                case ItemChange() as change:
                    return change
                case Conflict(current):
                    base = current.item.version
        raise AssertionError

    changes = await from_both(stores, 12, update_until_applied)

    assert sorted((c.item.version, c.sequence) for c in changes) == [(v, v + 1) for v in range(2, 14)]
    assert await stores[0].vault_sequence("v1") == 14


async def test_concurrent_creates_of_one_id_store_one(stores: Stores) -> None:
    await seed(stores[0])

    outcomes = await from_both(stores, 40, lambda store, n: store.create_item(new("n1", tag=str(n)), OPERATOR))

    created = [o for o in outcomes if isinstance(o, Created)]
    assert len(created) == 1
    winner = created[0].change
    assert winner.sequence == 3
    assert all(o == Existing(winner) for o in outcomes if not isinstance(o, Created))
    assert await stores[1].vault_sequence("v1") == 3


async def test_concurrent_creates_updates_and_deletes_take_distinct_numbers(stores: Stores) -> None:
    await seed(stores[0])

    created, updated, deleted = await asyncio.gather(
        from_both(stores, 10, lambda store, n: store.create_item(new(f"n{n}"), OPERATOR)),
        from_both(stores, 10, lambda store, n: store.update_item("v1", "i1", 1, replacing(str(n)), at(NOW))),
        from_both(stores, 10, lambda store, _: store.delete_item("v1", "i2", 1, at(NOW))),
    )

    sequences = [o.change.sequence for o in created if isinstance(o, Created)]
    sequences += [o.sequence for o in updated if isinstance(o, ItemChange)]
    sequences += {o.sequence for o in deleted if isinstance(o, ItemChange)}  # every delete answers the one change
    assert sorted(sequences) == list(range(3, 15))
    assert await stores[0].vault_sequence("v1") == 14


async def test_an_update_and_a_create_in_one_vault_do_not_deadlock(stores: Stores, migrated_url: str) -> None:
    """An update locks its item, then the vault; a create locks the vault, then inserts: none waits
    for a lock the other holds, in any interleaving."""
    await seed(stores[0])
    async with closing(PostgresStore.open(migrated_url)) as third:
        outcomes = await asyncio.gather(
            *(stores[0].update_item("v1", "i1", v, replacing(str(v)), at(NOW)) for v in range(1, 11)),
            *(stores[1].create_item(new(f"c{n}"), OPERATOR) for n in range(10)),
            *(third.update_item("v1", "i2", v, replacing(str(v)), at(NOW)) for v in range(1, 11)),
        )
    assert await stores[0].vault_sequence("v1") == 2 + len(
        {o for o in outcomes if isinstance(o, (ItemChange, Created))}
    )
