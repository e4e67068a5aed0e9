"""The repository contract of the changes feed: list_changes, the purge horizon, the change
feed's wake-ups. Every store alike."""

from __future__ import annotations

import asyncio

import pytest

from tests.actors import OPERATOR, at
from tests.contract.test_item_changes import NOW, new, replacing
from tests.store.stores import closing
from zkplatform.domain.models import ChangePage, Principal, Role, Tenant, Vault
from zkplatform.store import MigratableStore, open_store

WAKE_TIMEOUT = 10.0  # seconds; a wake-up comes within a poll interval, this only bounds a failure


@pytest.fixture
async def seeded(store: MigratableStore) -> MigratableStore:
    await store.add_tenant(Tenant("t1"), OPERATOR)
    await store.add_principal(Principal("p1", "t1", Role.OWNER, Role.OWNER.default_scopes), OPERATOR)
    await store.add_vault(Vault("v1", "t1", frozenset({"p1"})), OPERATOR)
    await store.add_vault(Vault("v2", "t1", frozenset({"p1"})), OPERATOR)
    await store.add_items([new("i1", now=NOW - 100), new("i2", now=NOW - 100), new("i3", now=NOW - 100)], OPERATOR)
    return store


def shape(page: ChangePage) -> list[tuple[str, int, bool]]:
    return [(c.item.item_id, c.sequence, c.item.deleted) for c in page.changes]


async def test_changes_come_in_sequence_each_item_once_at_its_latest_change(seeded: MigratableStore) -> None:
    await seeded.update_item("v1", "i1", 1, replacing("b"), at(NOW))  # 4
    await seeded.delete_item("v1", "i2", 1, at(NOW))  # 5
    await seeded.update_item("v1", "i1", 2, replacing("c"), at(NOW))  # 6

    page = await seeded.list_changes("v1", 0, 10)

    assert shape(page) == [("i3", 3, False), ("i2", 5, True), ("i1", 6, False)]
    assert page.changes[2].item == (await seeded.get_item("v1", "i1"))
    assert (page.sequence, page.purge_horizon) == (6, 0)


async def test_a_page_starts_after_the_cursor_and_stops_at_the_limit(seeded: MigratableStore) -> None:
    await seeded.create_item(new("i4"), OPERATOR)  # 4

    assert shape(await seeded.list_changes("v1", 1, 2)) == [("i2", 2, False), ("i3", 3, False)]
    assert shape(await seeded.list_changes("v1", 3, 2)) == [("i4", 4, False)]
    caught_up = await seeded.list_changes("v1", 4, 2)
    assert (caught_up.changes, caught_up.sequence) == ((), 4)


async def test_an_item_changed_many_times_is_listed_once_at_its_latest_change(seeded: MigratableStore) -> None:
    # More changes than the vault has items, many times over (the memory store drops superseded ones).
    for version in range(1, 201):
        await seeded.update_item("v1", "i1", version, replacing(f"v{version}"), at(NOW))  # 4 .. 203
    await seeded.delete_item("v1", "i2", 1, at(NOW))  # 204
    await seeded.purge_tombstones(NOW + 1, OPERATOR)
    await seeded.create_item(new("i0"), OPERATOR)  # 205

    assert shape(await seeded.list_changes("v1", 0, 10)) == [("i3", 3, False), ("i1", 203, False), ("i0", 205, False)]
    assert shape(await seeded.list_changes("v1", 100, 1)) == [("i1", 203, False)]
    assert shape(await seeded.list_changes("v1", 203, 10)) == [("i0", 205, False)]
    listed = await seeded.list_items("v1", "", 10, show_deleted=True)
    assert [item.item_id for item in listed.items] == ["i0", "i1", "i3"]
    assert [item.item_id for item in (await seeded.list_items("v1", "i0", 1, show_deleted=False)).items] == ["i1"]


async def test_an_import_in_any_order_lists_in_id_order_and_changes_in_its_order(seeded: MigratableStore) -> None:
    await seeded.add_items([new("z9", vault_id="v2"), new("a1"), new("m5", vault_id="v2"), new("b10")], OPERATOR)

    assert [i.item_id for i in (await seeded.list_items("v1", "", 10, show_deleted=False)).items] == [
        "a1", "b10", "i1", "i2", "i3",
    ]  # fmt: skip
    assert [i.item_id for i in (await seeded.list_items("v2", "m5", 10, show_deleted=False)).items] == ["z9"]
    assert shape(await seeded.list_changes("v2", 0, 10)) == [("z9", 1, False), ("m5", 2, False)]
    assert shape(await seeded.list_changes("v1", 3, 10)) == [("a1", 4, False), ("b10", 5, False)]


async def test_changes_of_one_vault_only(seeded: MigratableStore) -> None:
    await seeded.create_item(new("o1", vault_id="v2"), OPERATOR)

    assert shape(await seeded.list_changes("v2", 0, 10)) == [("o1", 1, False)]
    assert [c.item.item_id for c in (await seeded.list_changes("v1", 0, 10)).changes] == ["i1", "i2", "i3"]


async def test_a_vault_the_store_does_not_have_has_no_changes(seeded: MigratableStore) -> None:
    assert await seeded.list_changes("nope", 0, 10) == ChangePage((), 0, 0, await seeded.epoch())


async def test_a_purge_raises_the_horizon_of_each_vault_to_the_highest_sequence_it_purged(
    seeded: MigratableStore,
) -> None:
    await seeded.delete_item("v1", "i1", 1, at(NOW - 50))  # 4
    await seeded.delete_item("v1", "i2", 1, at(NOW - 50))  # 5
    await seeded.delete_item("v1", "i3", 1, at(NOW + 50))  # 6: too recent to purge
    await seeded.create_item(new("o1", vault_id="v2"), OPERATOR)
    await seeded.delete_item("v2", "o1", 1, at(NOW - 50))  # v2: 2

    assert await seeded.purge_tombstones(NOW, OPERATOR) == 3

    v1 = await seeded.list_changes("v1", 0, 10)
    assert (shape(v1), v1.sequence, v1.purge_horizon) == ([("i3", 6, True)], 6, 5)
    assert (await seeded.list_changes("v2", 0, 10)).purge_horizon == 2


async def test_the_horizon_never_falls(seeded: MigratableStore) -> None:
    await seeded.delete_item("v1", "i3", 1, at(NOW - 50))  # 4
    await seeded.purge_tombstones(NOW, OPERATOR)
    await seeded.delete_item("v1", "i1", 1, at(NOW - 50))  # 5
    await seeded.create_item(new("i3", now=NOW - 50), OPERATOR)  # 6: the id is free again
    await seeded.delete_item("v1", "i3", 1, at(NOW - 50))  # 7
    await seeded.purge_tombstones(NOW, OPERATOR)
    assert (await seeded.list_changes("v1", 0, 10)).purge_horizon == 7

    assert await seeded.purge_tombstones(NOW, OPERATOR) == 0
    assert (await seeded.list_changes("v1", 0, 10)).purge_horizon == 7


async def test_a_purge_of_nothing_leaves_the_horizon(seeded: MigratableStore) -> None:
    assert await seeded.purge_tombstones(NOW, OPERATOR) == 0
    assert (await seeded.list_changes("v1", 0, 10)).purge_horizon == 0


async def test_a_change_wakes_the_watches_of_its_vault(seeded: MigratableStore) -> None:
    feed = seeded.change_feed()
    watching = feed.subscribe("v1", "tok_1")
    try:
        await seeded.update_item("v1", "i1", 1, replacing("b"), at(NOW))
        await asyncio.wait_for(watching.wait(), WAKE_TIMEOUT)
        await seeded.delete_item("v1", "i1", 2, at(NOW))
        await asyncio.wait_for(watching.wait(), WAKE_TIMEOUT)
    finally:
        watching.close()


async def test_a_change_made_through_another_store_wakes_the_watches(
    seeded: MigratableStore, request: pytest.FixtureRequest
) -> None:
    """Another store on the same database stands for another worker or host."""
    kind = request.node.callspec.params["store"]
    if kind == "memory":
        pytest.skip("a memory store is one process's own")
    path = getattr(seeded, "_path", None)
    url = f"sqlite:///{path}" if kind == "sqlite" else request.getfixturevalue("postgres_url")
    watching = seeded.change_feed().subscribe("v1", "tok_1")
    try:
        # The first wake-up says the feed watches the database (LISTEN is in effect, or
        # the poller has read the sequences it compares with).
        await asyncio.wait_for(watching.wait(), WAKE_TIMEOUT)
        async with closing(open_store(url)) as other:
            await other.create_item(new("far"), OPERATOR)
            await asyncio.wait_for(watching.wait(), WAKE_TIMEOUT)
        assert shape(await seeded.list_changes("v1", 3, 10)) == [("far", 4, False)]
    finally:
        watching.close()
