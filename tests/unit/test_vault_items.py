"""CreateItem, UpdateItem, GetItem and ListItems use cases on the memory store."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable

import pytest

from tests.actors import OPERATOR
from tests.world import FakeClock, World
from zkplatform.domain.auth import Caller, Presented
from zkplatform.domain.dpop import ProofRequest
from zkplatform.domain.errors import (
    InvalidArgument,
    ItemDeleted,
    ItemExists,
    NotFound,
    PermissionDenied,
    VersionMismatch,
)
from zkplatform.domain.models import EncryptedPayload, ItemChange, ItemContent, ItemPatch, Scope, WrappedKey
from zkplatform.domain.vault import ListedItems

NO_PROOF = ProofRequest(proof=None, htm="POST", htu="http://testserver/platform.v1.VaultService/CreateItem")
VAULT = "acme-shared"  # alice and bob are members


def content(tag: str = "a", keys: Iterable[str] = ("alice", "bob")) -> ItemContent:
    return ItemContent(
        kind="login",
        title_hash=f"th-{tag}",
        payload=EncryptedPayload("XC20P", f"nonce{tag}", "", f"ciphertext{tag}", 1),
        wrapped_keys=tuple(WrappedKey(k, "A256KW", f"key-{k}-{tag}") for k in keys),
    )


def replacing(tag: str = "a", keys: Iterable[str] = ("alice", "bob")) -> ItemPatch:
    """An update of the whole content, as one without a field mask writes."""
    return ItemPatch.replacing(content(tag, keys))


async def caller(world: World, principal_id: str, scopes: Iterable[Scope] | None = None) -> Caller:
    token = world.token(principal_id)
    if scopes is not None:
        principal = await world.platform.store.get_principal(principal_id)
        assert principal is not None
        token = (await world.platform.issuer.issue(principal, 600, scopes)).secret
    return await world.platform.authenticator.authenticate(Presented(token, dpop_scheme=False), NO_PROOF)


async def sequence(world: World, vault_id: str = VAULT) -> int:
    return await world.platform.store.vault_sequence(vault_id)


# create


async def test_create_stores_version_1_now_with_the_next_sequence(world: World, clock: FakeClock) -> None:
    before = await sequence(world)
    clock.advance(30)

    change = await world.platform.vault.create_item(await caller(world, "bob"), VAULT, "new-1", content())

    assert change == ItemChange(content().new_item("new-1", "acme", VAULT, clock.now), before + 1)
    assert change.item.version == 1
    assert change.item.updated_at == clock.now
    assert await world.item(VAULT, "new-1") == change.item
    assert await sequence(world) == before + 1


async def test_a_repeated_create_answers_the_first(world: World, clock: FakeClock) -> None:
    bob = await caller(world, "bob")
    first = await world.platform.vault.create_item(bob, VAULT, "new-1", content())
    clock.advance(60)

    assert await world.platform.vault.create_item(bob, VAULT, "new-1", content()) == first
    alice = await caller(world, "alice")
    assert await world.platform.vault.create_item(alice, VAULT, "new-1", content()) == first  # same content, anyone
    assert await sequence(world) == first.sequence


@pytest.mark.parametrize(
    "other",
    [
        content("b"),
        content(keys=("bob", "alice")),  # the same keys in another order
        content(keys=("alice",)),
        ItemContent("note", content().title_hash, content().payload, content().wrapped_keys),
    ],
    ids=["payload", "key-order", "keys", "kind"],
)
async def test_create_of_a_taken_id_with_other_content_is_refused(world: World, other: ItemContent) -> None:
    bob = await caller(world, "bob")
    first = await world.platform.vault.create_item(bob, VAULT, "new-1", content())

    with pytest.raises(ItemExists) as raised:
        await world.platform.vault.create_item(bob, VAULT, "new-1", other)

    assert (raised.value.current_version, raised.value.deleted) == (1, False)
    assert await world.item(VAULT, "new-1") == first.item


async def test_create_over_a_changed_or_deleted_item_is_refused(world: World) -> None:
    bob = await caller(world, "bob")
    first = await world.platform.vault.create_item(bob, VAULT, "new-1", content())
    await world.platform.vault.update_item(bob, VAULT, "new-1", 1, replacing("b"))
    deleted = await world.platform.vault.delete_item(bob, VAULT, "item-1", 1)
    seeded = await world.item(VAULT, "item-2")
    assert seeded.content is not None

    with pytest.raises(ItemExists) as changed:
        await world.platform.vault.create_item(bob, VAULT, "new-1", content())  # the first content, now at 2
    with pytest.raises(ItemExists) as tombstone:
        await world.platform.vault.create_item(bob, VAULT, "item-1", content())
    assert (changed.value.current_version, changed.value.deleted) == (2, False)
    assert (tombstone.value.current_version, tombstone.value.deleted) == (deleted.item.version, True)
    # Live at version 1 with this very content: answered as its creation, however it was created.
    assert await world.platform.vault.create_item(bob, VAULT, "item-2", seeded.content) == ItemChange(seeded, 2)
    assert first.item.version == 1
    await world.platform.vault.update_item(bob, VAULT, "new-1", 2, replacing())  # back to the first content
    with pytest.raises(ItemExists) as again:
        await world.platform.vault.create_item(bob, VAULT, "new-1", content())
    assert again.value.current_version == 3


async def test_the_id_of_a_purged_tombstone_may_be_created_again(world: World, clock: FakeClock) -> None:
    bob = await caller(world, "bob")
    await world.platform.vault.delete_item(bob, VAULT, "item-1", 1)
    clock.advance(10)
    await world.platform.store.purge_tombstones(clock.now, OPERATOR)

    change = await world.platform.vault.create_item(bob, VAULT, "item-1", content())

    assert change.item.version == 1


async def test_concurrent_creates_of_one_id_make_one_change(world: World) -> None:
    bob = await caller(world, "bob")
    before = await sequence(world)

    outcomes = await asyncio.gather(
        *(world.platform.vault.create_item(bob, VAULT, "new-1", content()) for _ in range(10)),
        *(world.platform.vault.create_item(bob, VAULT, "new-1", content("b")) for _ in range(10)),
        return_exceptions=True,
    )

    changes = {o for o in outcomes if isinstance(o, ItemChange)}
    assert len(changes) == 1
    assert changes.pop().sequence == before + 1
    assert all(isinstance(o, ItemExists) for o in outcomes if not isinstance(o, ItemChange))
    assert await sequence(world) == before + 1


# update


async def test_update_replaces_everything_one_version_later(world: World, clock: FakeClock) -> None:
    bob = await caller(world, "bob")
    before = await world.item(VAULT, "item-3")
    seq = await sequence(world)
    clock.advance(7)

    change = await world.platform.vault.update_item(bob, VAULT, "item-3", 1, replacing("b", keys=("bob",)))

    assert change.sequence == seq + 1
    assert change.item.version == 2
    assert change.item.updated_at == clock.now
    assert change.item.content == content("b", keys=("bob",))
    assert (change.item.item_id, change.item.tenant_id, change.item.vault_id) == (
        before.item_id,
        before.tenant_id,
        before.vault_id,
    )
    assert await world.item(VAULT, "item-3") == change.item


async def test_a_repeated_update_answers_the_first(world: World, clock: FakeClock) -> None:
    bob = await caller(world, "bob")
    first = await world.platform.vault.update_item(bob, VAULT, "item-3", 1, replacing("b"))
    clock.advance(60)

    assert await world.platform.vault.update_item(bob, VAULT, "item-3", 1, replacing("b")) == first
    assert await sequence(world) == first.sequence
    with pytest.raises(VersionMismatch) as raised:  # another content at the same base: a real conflict
        await world.platform.vault.update_item(bob, VAULT, "item-3", 1, replacing("c"))
    assert raised.value.current_version == 2
    await world.platform.vault.update_item(bob, VAULT, "item-3", 2, replacing("c"))
    third = await world.platform.vault.update_item(bob, VAULT, "item-3", 3, replacing("b"))
    with pytest.raises(VersionMismatch) as later:  # the first update repeated, its content now current
        await world.platform.vault.update_item(bob, VAULT, "item-3", 1, replacing("b"))
    assert later.value.current_version == 4
    assert await world.item(VAULT, "item-3") == third.item


async def test_update_at_another_version_is_refused_with_the_current_one(world: World) -> None:
    bob = await caller(world, "bob")
    for base in (2, 5):
        with pytest.raises(VersionMismatch) as raised:
            await world.platform.vault.update_item(bob, VAULT, "item-3", base, replacing())
        assert raised.value.current_version == 1
    assert (await world.item(VAULT, "item-3")).content != content()


async def test_update_of_a_tombstone_is_refused_whatever_the_version(world: World) -> None:
    bob = await caller(world, "bob")
    await world.platform.vault.update_item(bob, VAULT, "item-3", 1, replacing("b"))
    await world.platform.vault.delete_item(bob, VAULT, "item-3", 2)
    for base in (1, 2, 3):
        with pytest.raises(ItemDeleted):
            await world.platform.vault.update_item(bob, VAULT, "item-3", base, replacing("b"))


async def test_update_of_an_unknown_item_is_not_found(world: World) -> None:
    bob = await caller(world, "bob")
    with pytest.raises(NotFound):
        await world.platform.vault.update_item(bob, VAULT, "no-such-item", 1, replacing())
    with pytest.raises(NotFound):  # an item of another vault
        await world.platform.vault.update_item(await caller(world, "alice"), VAULT, "new-1", 1, replacing())


async def test_concurrent_updates_at_one_version_make_one_change(world: World) -> None:
    bob = await caller(world, "bob")
    before = await sequence(world)

    outcomes = await asyncio.gather(
        *(world.platform.vault.update_item(bob, VAULT, "item-4", 1, replacing(str(n))) for n in range(20)),
        return_exceptions=True,
    )

    changes = [o for o in outcomes if isinstance(o, ItemChange)]
    assert len(changes) == 1
    assert changes[0].sequence == before + 1
    assert all(isinstance(o, VersionMismatch) and o.current_version == 2 for o in outcomes if o is not changes[0])
    assert await sequence(world) == before + 1


# get


async def test_get_answers_items_and_tombstones(world: World) -> None:
    bob = await caller(world, "bob")
    assert await world.platform.vault.get_item(bob, VAULT, "item-5") == await world.item(VAULT, "item-5")
    tombstone = await world.platform.vault.delete_item(bob, VAULT, "item-5", 1)
    assert await world.platform.vault.get_item(bob, VAULT, "item-5") == tombstone.item
    with pytest.raises(NotFound):
        await world.platform.vault.get_item(bob, VAULT, "no-such-item")


# the order of checks


UseCase = Callable[[World, Caller, str], Awaitable[object]]
USE_CASES: dict[str, tuple[Scope, UseCase]] = {
    "create": (Scope.VAULT_ITEMS_WRITE, lambda w, c, v: w.platform.vault.create_item(c, v, "item-1", content())),
    "update": (Scope.VAULT_ITEMS_WRITE, lambda w, c, v: w.platform.vault.update_item(c, v, "nope", 9, replacing())),
    "get": (Scope.VAULT_ITEMS_READ, lambda w, c, v: w.platform.vault.get_item(c, v, "nope")),
    "list": (Scope.VAULT_ITEMS_READ, lambda w, c, v: w.platform.vault.list_items(c, v, 0, "garbage", False)),
}


@pytest.mark.parametrize("name", USE_CASES)
async def test_scope_then_membership_then_the_item(world: World, name: str) -> None:
    scope, use_case = USE_CASES[name]
    others = [s for s in Scope if s != scope]
    without_scope = await caller(world, "alice", others)
    bob = await caller(world, "bob")

    # Without the scope: refused for the scope, even where the caller is no member.
    for vault_id in (VAULT, "acme-private", "globex-main", "no-such-vault"):
        with pytest.raises(PermissionDenied, match=scope.value.replace(".", r"\.")):
            await use_case(world, without_scope, vault_id)
    # With it: refused for membership, before the item (or the page token) is looked at.
    for vault_id in ("acme-private", "globex-main", "no-such-vault"):
        with pytest.raises(PermissionDenied, match="not a member"):
            await use_case(world, bob, vault_id)
    # A member: now the item decides.
    with pytest.raises((ItemExists, NotFound, InvalidArgument)):
        await use_case(world, bob, VAULT)


# list


async def listing(
    world: World, who: Caller, *, page_size: int, show_deleted: bool = False, vault_id: str = VAULT
) -> list[ListedItems]:
    pages = [await world.platform.vault.list_items(who, vault_id, page_size, "", show_deleted)]
    while pages[-1].next_page_token:
        token = pages[-1].next_page_token
        pages.append(await world.platform.vault.list_items(who, vault_id, page_size, token, show_deleted))
        assert len(pages) < 100
    return pages


def ids(pages: Iterable[ListedItems]) -> list[str]:
    return [item.item_id for page in pages for item in page.items]


async def test_list_pages_through_the_vault_by_item_id(world: World) -> None:
    bob = await caller(world, "bob")
    for n in range(1, 8):
        await world.platform.vault.create_item(bob, VAULT, f"a-{n}", content())
    expected = [f"a-{n}" for n in range(1, 8)] + [f"item-{n}" for n in range(1, 7)]

    for size, count in ((1, 13), (3, 5), (12, 2), (13, 1), (0, 1), (1000, 1)):
        pages = await listing(world, bob, page_size=size)
        assert ids(pages) == expected
        assert len(pages) == count
        assert all(len(page.items) == (size or 100) for page in pages[:-1])
        assert pages[-1].next_page_token == ""
        assert {page.sequence for page in pages} == {await sequence(world)}


async def test_an_exactly_full_last_page_has_no_token(world: World) -> None:
    pages = await listing(world, await caller(world, "bob"), page_size=6)
    assert [len(p.items) for p in pages] == [6]
    assert pages[0].next_page_token == ""


async def test_list_shows_tombstones_only_when_asked(world: World) -> None:
    bob = await caller(world, "bob")
    for n in (1, 2, 4, 6):
        await world.platform.vault.delete_item(bob, VAULT, f"item-{n}", 1)

    live = await listing(world, bob, page_size=1)
    assert ids(live) == ["item-3", "item-5"]
    assert len(live) == 2  # pages are full of live items, tombstones between them skipped
    every = await listing(world, bob, page_size=4, show_deleted=True)
    assert ids(every) == [f"item-{n}" for n in range(1, 7)]
    assert [i.deleted for p in every for i in p.items] == [True, True, False, True, False, True]


async def test_an_empty_vault_lists_one_empty_page(world: World) -> None:
    bob = await caller(world, "bob")
    for n in range(1, 7):
        await world.platform.vault.delete_item(bob, VAULT, f"item-{n}", 1)

    epoch = await world.platform.store.epoch()
    assert await listing(world, bob, page_size=0) == [ListedItems((), "", await sequence(world), epoch)]


async def test_the_first_pages_sequence_holds_for_the_whole_listing(world: World) -> None:
    bob = await caller(world, "bob")
    first = await world.platform.vault.list_items(bob, VAULT, 2, "", False)
    at_first = await sequence(world)
    assert first.sequence == at_first
    # Changes between pages: after the page read, within it, and new items ahead.
    await world.platform.vault.update_item(bob, VAULT, "item-1", 1, replacing("b"))
    await world.platform.vault.update_item(bob, VAULT, "item-4", 1, replacing("b"))
    await world.platform.vault.delete_item(bob, VAULT, "item-5", 1)
    await world.platform.vault.create_item(bob, VAULT, "item-9", content())
    assert await sequence(world) == at_first + 4

    rest = [first]
    while rest[-1].next_page_token:
        rest.append(await world.platform.vault.list_items(bob, VAULT, 2, rest[-1].next_page_token, False))

    assert {page.sequence for page in rest} == {at_first}
    assert ids(rest) == ["item-1", "item-2", "item-3", "item-4", "item-6", "item-9"]
    assert next(i for p in rest for i in p.items if i.item_id == "item-4").version == 2  # read as it now is
    fresh = await world.platform.vault.list_items(bob, VAULT, 2, "", False)
    assert fresh.sequence == at_first + 4  # a new listing starts from the vault as it now is


async def test_a_negative_page_size_is_refused_and_a_larger_one_than_1000_means_1000(
    world: World, clock: FakeClock
) -> None:
    """AIP-158: a page size above the maximum is coerced down, never refused."""
    bob = await caller(world, "bob")
    with pytest.raises(InvalidArgument) as raised:
        await world.platform.vault.list_items(bob, VAULT, -1, "", False)
    assert [v.field for v in raised.value.violations] == ["pageSize"]

    more = [content(f"{n}").new_item(f"more-{n:04}", "acme", VAULT, clock.now) for n in range(1000)]
    await world.platform.store.add_items(more, OPERATOR)
    largest = await world.platform.vault.list_items(bob, VAULT, 5000, "", False)
    assert len(largest.items) == 1000
    assert largest.next_page_token  # the seeded items follow


async def page_token(world: World, who: Caller, vault_id: str = VAULT, *, show_deleted: bool = False) -> str:
    token = (await world.platform.vault.list_items(who, vault_id, 2, "", show_deleted)).next_page_token
    assert token
    return token


def refused(raised: pytest.ExceptionInfo[InvalidArgument]) -> list[str]:
    return [v.field for v in raised.value.violations]


async def test_a_page_token_is_for_its_own_vault_and_filter(world: World) -> None:
    alice = await caller(world, "alice")
    token = await page_token(world, alice)

    for vault_id, show_deleted in (("acme-private", False), (VAULT, True)):
        with pytest.raises(InvalidArgument) as raised:
            await world.platform.vault.list_items(alice, vault_id, 2, token, show_deleted)
        assert refused(raised) == ["pageToken"]
    assert ids([await world.platform.vault.list_items(alice, VAULT, 2, token, False)]) == ["item-3", "item-4"]


async def test_a_page_token_is_for_its_own_tenant(world: World) -> None:
    """A token of globex's vault, presented by carol for a vault of the same id in another
    tenant, would have to read the same: it is bound to the tenant as well."""
    carol = await caller(world, "carol")
    token = await page_token(world, carol, "globex-main")
    tokens = world.platform.vault._page_tokens  # the server's own tokens, as issued
    assert tokens.read(token, "globex", "globex-main", "live").after == "item-2"

    with pytest.raises(InvalidArgument):
        tokens.read(token, "acme", "globex-main", "live")


@pytest.mark.parametrize(
    "garbage",
    ["garbage", "%%%", "é", "AQ", "A" * 1024, "AQAAAAAAAAAIaXRlbS0zKzsuZHSi7uB56oAMwLuijQ=="],
)
async def test_garbage_page_tokens_are_refused(world: World, garbage: str) -> None:
    bob = await caller(world, "bob")
    with pytest.raises(InvalidArgument) as raised:
        await world.platform.vault.list_items(bob, VAULT, 2, garbage, False)
    assert refused(raised) == ["pageToken"]


async def test_an_altered_page_token_is_refused(world: World) -> None:
    bob = await caller(world, "bob")
    token = await page_token(world, bob)
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    altered = [token[:i] + alphabet[(alphabet.index(token[i]) + 1) % 64] + token[i + 1 :] for i in range(len(token))]
    altered += [token + "A", token[:-1], token + "!", "!" + token]

    for other in altered:
        with pytest.raises(InvalidArgument):
            await world.platform.vault.list_items(bob, VAULT, 2, other, False)
