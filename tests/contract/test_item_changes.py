"""The repository contract of creating, updating and listing items: every store alike."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

import pytest

from tests.actors import OPERATOR, at
from zkplatform.domain.models import (
    EncryptedPayload,
    Item,
    ItemChange,
    ItemContent,
    ItemPage,
    ItemPatch,
    Principal,
    Role,
    Tenant,
    Vault,
    WrappedKey,
)
from zkplatform.domain.ports.items import Conflict, Created, Existing, Missing
from zkplatform.domain.ports.refusals import UnknownReference
from zkplatform.store import MigratableStore

NOW = 1_800_000_000


def content(tag: str = "a") -> ItemContent:
    return ItemContent(
        kind="note",
        title_hash=f"th-{tag}",
        payload=EncryptedPayload("A256GCM", f"bm9uY2U{tag}", "YWFk", f"Y2lwaGVy{tag}", 2),
        wrapped_keys=(WrappedKey("p1", "ECDH-ES+A256KW", f"a2V5{tag}"), WrappedKey("p2", "A256KW", "a2V5Mg")),
    )


def replacing(tag: str = "a") -> ItemPatch:
    """An update of the whole content, as one without a field mask writes."""
    return ItemPatch.replacing(content(tag))


def new(item_id: str, vault_id: str = "v1", tenant_id: str = "t1", tag: str = "a", now: int = NOW) -> Item:
    return content(tag).new_item(item_id, tenant_id, vault_id, now)


@pytest.fixture
async def seeded(store: MigratableStore) -> MigratableStore:
    await store.add_tenant(Tenant("t1"), OPERATOR)
    await store.add_tenant(Tenant("t2"), OPERATOR)
    await store.add_principal(Principal("p1", "t1", Role.OWNER, Role.OWNER.default_scopes), OPERATOR)
    await store.add_vault(Vault("v1", "t1", frozenset({"p1"})), OPERATOR)
    await store.add_vault(Vault("v2", "t1", frozenset()), OPERATOR)
    await store.add_items([new("i1", now=NOW - 100), new("i2", now=NOW - 100)], OPERATOR)
    return store


# create


async def test_create_stores_the_item_with_the_next_sequence(seeded: MigratableStore) -> None:
    outcome = await seeded.create_item(new("n1"), OPERATOR)

    assert outcome == Created(ItemChange(new("n1"), 3))
    assert await seeded.get_item("v1", "n1") == new("n1")
    assert await seeded.vault_sequence("v1") == 3
    assert await seeded.create_item(new("n1", vault_id="v2"), OPERATOR) == Created(
        ItemChange(new("n1", vault_id="v2"), 1)
    )


async def test_create_of_a_taken_id_changes_nothing_and_answers_the_item(seeded: MigratableStore) -> None:
    await seeded.create_item(new("n1"), OPERATOR)
    await seeded.delete_item("v1", "i2", 1, at(NOW))

    assert await seeded.create_item(new("n1", tag="b", now=NOW + 5), OPERATOR) == Existing(ItemChange(new("n1"), 3))
    tombstone = new("i2", now=NOW - 100).tombstone(NOW)
    assert await seeded.create_item(new("i2"), OPERATOR) == Existing(ItemChange(tombstone, 4))
    assert await seeded.get_item("v1", "n1") == new("n1")
    assert await seeded.vault_sequence("v1") == 4


async def test_create_needs_the_vault_in_the_items_tenant(seeded: MigratableStore) -> None:
    for item in (new("n1", vault_id="v9"), new("n1", tenant_id="t2")):
        with pytest.raises(UnknownReference, match="no vault"):
            await seeded.create_item(item, OPERATOR)
    assert await seeded.get_item("v1", "n1") is None
    assert await seeded.vault_sequence("v1") == 2


async def test_a_purged_tombstones_id_may_be_created_again(seeded: MigratableStore) -> None:
    await seeded.delete_item("v1", "i1", 1, at(NOW - 50))
    await seeded.purge_tombstones(NOW, OPERATOR)

    assert await seeded.create_item(new("i1", tag="b"), OPERATOR) == Created(ItemChange(new("i1", tag="b"), 4))


async def test_concurrent_creates_of_one_id_store_one(seeded: MigratableStore) -> None:
    outcomes = await asyncio.gather(*(seeded.create_item(new("n1", tag=str(n)), OPERATOR) for n in range(20)))

    created = [o for o in outcomes if isinstance(o, Created)]
    assert len(created) == 1
    winner = created[0].change
    assert winner.sequence == 3
    assert all(o == Existing(winner) for o in outcomes if not isinstance(o, Created))
    assert await seeded.get_item("v1", "n1") == winner.item
    assert await seeded.vault_sequence("v1") == 3


async def test_concurrent_creates_of_many_ids_take_one_number_each(seeded: MigratableStore) -> None:
    outcomes = await asyncio.gather(*(seeded.create_item(new(f"n{n}"), OPERATOR) for n in range(20)))

    assert all(isinstance(o, Created) for o in outcomes)
    assert sorted(o.change.sequence for o in outcomes if isinstance(o, Created)) == list(range(3, 23))
    assert await seeded.vault_sequence("v1") == 22


# update


async def test_update_replaces_the_content_one_version_later(seeded: MigratableStore) -> None:
    outcome = await seeded.update_item("v1", "i1", 1, replacing("b"), at(NOW))

    expected = replace(new("i1", tag="b"), version=2)
    assert outcome == ItemChange(expected, 3)
    assert await seeded.get_item("v1", "i1") == expected
    assert await seeded.vault_sequence("v1") == 3
    assert await seeded.update_item("v1", "i1", 2, replacing("c"), at(NOW + 1)) == ItemChange(
        replace(new("i1", tag="c", now=NOW + 1), version=3), 4
    )


async def test_an_update_of_the_wrapped_keys_alone_keeps_the_rest(seeded: MigratableStore) -> None:
    """Sharing an item with a new recipient: the keys change, the ciphertext is not sent again."""
    before = await seeded.get_item("v1", "i1")
    assert before is not None
    keys = (WrappedKey("p1", "A256KW", "bmV3MQ"), WrappedKey("p3", "ECDH-ES", "bmV3Mw"))

    outcome = await seeded.update_item("v1", "i1", 1, ItemPatch(wrapped_keys=keys), at(NOW))

    expected = replace(before, version=2, updated_at=NOW, wrapped_keys=keys)
    assert outcome == ItemChange(expected, 3)
    assert await seeded.get_item("v1", "i1") == expected
    assert await seeded.vault_sequence("v1") == 3
    # Still a compare-and-set: at the old version it changes nothing.
    assert await seeded.update_item("v1", "i1", 1, ItemPatch(wrapped_keys=keys[:1]), at(NOW)) == Conflict(outcome)


async def test_an_update_writes_each_field_it_names_and_only_those(seeded: MigratableStore) -> None:
    first, other = new("i1", now=NOW - 100), content("b")
    steps: list[tuple[ItemPatch, dict[str, Any]]] = [
        (ItemPatch(kind="card"), {"kind": "card"}),
        (ItemPatch(title_hash=""), {"title_hash": ""}),  # empty is a value: it clears the title hash
        (ItemPatch(payload=other.payload), {"payload": other.payload}),
        (
            ItemPatch(kind="login", title_hash="dGl0bGU", wrapped_keys=other.wrapped_keys),
            {"kind": "login", "title_hash": "dGl0bGU", "wrapped_keys": other.wrapped_keys},
        ),
    ]
    expected = first

    for version, (patch, written) in enumerate(steps, start=1):
        outcome = await seeded.update_item("v1", "i1", version, patch, at(NOW + version))

        expected = replace(expected, version=version + 1, updated_at=NOW + version, **written)
        assert outcome == ItemChange(expected, 2 + version)
        assert await seeded.get_item("v1", "i1") == expected
    assert (expected.kind, expected.title_hash, expected.payload) == ("login", "dGl0bGU", other.payload)
    assert first.payload != other.payload


async def test_update_that_does_not_apply_answers_the_item_as_it_is(seeded: MigratableStore) -> None:
    changed = await seeded.update_item("v1", "i1", 1, replacing("b"), at(NOW))
    deleted = await seeded.delete_item("v1", "i2", 1, at(NOW))
    assert isinstance(changed, ItemChange)
    assert isinstance(deleted, ItemChange)

    assert await seeded.update_item("v1", "i1", 1, replacing("c"), at(NOW + 1)) == Conflict(changed)
    assert await seeded.update_item("v1", "i1", 5, replacing("c"), at(NOW + 1)) == Conflict(changed)
    assert await seeded.update_item("v1", "i2", 1, replacing("c"), at(NOW + 1)) == Conflict(deleted)
    assert await seeded.update_item("v1", "i2", 2, replacing("c"), at(NOW + 1)) == Conflict(deleted)
    assert await seeded.update_item("v1", "nope", 1, replacing("c"), at(NOW + 1)) == Missing()
    assert await seeded.update_item("v2", "i1", 1, replacing("c"), at(NOW + 1)) == Missing()
    assert await seeded.vault_sequence("v1") == 4
    assert await seeded.vault_sequence("v2") == 0


async def test_concurrent_updates_at_one_version_make_one_change(seeded: MigratableStore) -> None:
    outcomes = await asyncio.gather(
        *(seeded.update_item("v1", "i1", 1, replacing(str(n)), at(NOW)) for n in range(20)),
    )

    changes = [o for o in outcomes if isinstance(o, ItemChange)]
    assert len(changes) == 1
    (winner,) = changes
    assert winner.sequence == 3
    assert winner.item.version == 2
    assert all(o == Conflict(winner) for o in outcomes if not isinstance(o, ItemChange))
    assert await seeded.get_item("v1", "i1") == winner.item
    assert await seeded.vault_sequence("v1") == 3


async def test_concurrent_updates_and_deletes_of_one_version(seeded: MigratableStore) -> None:
    outcomes = await asyncio.gather(
        *(seeded.update_item("v1", "i1", 1, replacing(str(n)), at(NOW)) for n in range(10)),
        *(seeded.delete_item("v1", "i1", 1, at(NOW)) for _ in range(10)),
    )

    changed = {o for o in outcomes if isinstance(o, ItemChange) and o.sequence == 3}
    assert len(changed) == 1  # exactly one change, an update or a delete, and one number
    assert await seeded.vault_sequence("v1") == 3


# list


async def test_list_pages_by_item_id(seeded: MigratableStore) -> None:
    await seeded.add_items([new(f"k{n:02}") for n in range(10)], OPERATOR)
    stored = {i.item_id: i for i in [*(new(f"k{n:02}") for n in range(10)), new("i1", now=NOW - 100)]}

    epoch = await seeded.epoch()
    first = await seeded.list_items("v1", "", 4, show_deleted=False)
    assert first == ItemPage((stored["i1"], new("i2", now=NOW - 100), stored["k00"], stored["k01"]), 12, epoch)
    second = await seeded.list_items("v1", "k01", 4, show_deleted=False)
    assert [i.item_id for i in second.items] == ["k02", "k03", "k04", "k05"]
    last = await seeded.list_items("v1", "k07", 4, show_deleted=False)
    assert [i.item_id for i in last.items] == ["k08", "k09"]
    assert await seeded.list_items("v1", "k09", 4, show_deleted=False) == ItemPage((), 12, epoch)
    assert await seeded.list_items("v1", "k0", 1, show_deleted=False) == ItemPage((stored["k00"],), 12, epoch)


async def test_list_shows_tombstones_only_when_asked(seeded: MigratableStore) -> None:
    await seeded.add_items([new("a"), new("b"), new("c"), new("d")], OPERATOR)
    for item_id in ("a", "b", "d", "i1"):
        await seeded.delete_item("v1", item_id, 1, at(NOW))

    live = await seeded.list_items("v1", "", 10, show_deleted=False)
    assert [i.item_id for i in live.items] == ["c", "i2"]
    assert live.sequence == 10
    every = await seeded.list_items("v1", "", 10, show_deleted=True)
    assert [(i.item_id, i.deleted) for i in every.items] == [
        ("a", True),
        ("b", True),
        ("c", False),
        ("d", True),
        ("i1", True),
        ("i2", False),
    ]
    assert every.items[0] == new("a").tombstone(NOW)
    # A page of live items is full even when tombstones lie between them.
    assert [i.item_id for i in (await seeded.list_items("v1", "", 1, show_deleted=False)).items] == ["c"]
    assert [i.item_id for i in (await seeded.list_items("v1", "", 3, show_deleted=True)).items] == ["a", "b", "c"]


async def test_list_of_an_empty_or_unknown_vault(seeded: MigratableStore) -> None:
    epoch = await seeded.epoch()
    assert await seeded.list_items("v2", "", 10, show_deleted=True) == ItemPage((), 0, epoch)
    assert await seeded.list_items("nowhere", "", 10, show_deleted=True) == ItemPage((), 0, epoch)
    await seeded.create_item(new("x", vault_id="v2"), OPERATOR)
    await seeded.delete_item("v2", "x", 1, at(NOW))
    assert await seeded.list_items("v2", "", 10, show_deleted=False) == ItemPage((), 2, epoch)


async def test_list_reads_the_sequence_in_the_items_snapshot(seeded: MigratableStore) -> None:
    """Whatever commits while pages are read, each page's sequence is the one its items are at:
    the sequence counts the changes, so a page that shows n updates of `hot` says 2 + n + its
    creations."""
    await seeded.create_item(new("hot"), OPERATOR)  # sequence 3

    async def updates() -> None:
        for version in range(1, 41):
            await seeded.update_item("v1", "hot", version, replacing(str(version)), at(NOW))

    async def pages() -> list[ItemPage]:
        return [await seeded.list_items("v1", "", 10, show_deleted=False) for _ in range(40)]

    _, seen = await asyncio.gather(updates(), pages())

    for page in seen:
        hot = next(i for i in page.items if i.item_id == "hot")
        assert page.sequence == 3 + hot.version - 1
