"""Pages bounded in bytes, on the memory store: ListItems, ListChanges, every WatchChanges message
and ListTokens stop before their answer's binary encoding would exceed 3 MiB, with at least one
element, and the next page (its token, the cursor, has_more) continues exactly after the cut."""

from __future__ import annotations

import asyncio

import pytest

from tests.actors import OPERATOR
from tests.big_items import COUNT, ID_FORMAT, big_content
from tests.unit.test_vault_items import VAULT, caller, ids, listing
from tests.world import PEPPER, FakeClock, World
from zkplatform.domain.models import Item, ItemChange, Role, TokenRecord
from zkplatform.domain.paging import PAGE_BYTES, PageTokens
from zkplatform.domain.sync import ListedChanges
from zkplatform.domain.token_management import TokenManagement
from zkplatform.messages.convert import changes_response, list_response, tokens_response, watch_message
from zkplatform.messages.sizes import EncodedSizes
from zkplatform.store.memory import MemoryStore
from zkplatform.wiring import Platform

RETENTION = 90 * 86_400
SEEDED = [f"item-{n}" for n in range(1, 7)]  # the development vault's own items
BIG = [ID_FORMAT.format(n) for n in range(COUNT)]
STEP = 5.0


@pytest.fixture
async def big(world: World, clock: FakeClock) -> World:
    """The development vault with 100 items of about 62 KB each after its own six."""
    items = [big_content(n).new_item(ID_FORMAT.format(n), "acme", VAULT, clock.now) for n in range(COUNT)]
    await world.platform.store.add_items(items, OPERATOR)
    return world


async def test_a_page_of_items_stops_at_3_mib_and_the_next_goes_on_from_there(big: World) -> None:
    bob = await caller(big, "bob")

    pages = await listing(big, bob, page_size=0)

    encoded = [list_response(VAULT, page, retention=RETENTION).ByteSize() for page in pages]
    assert max(encoded) <= PAGE_BYTES
    assert len(pages[0].items) < 100  # the page size, not reached
    assert encoded[0] > PAGE_BYTES - 70_000  # no more than one item short of the bound
    assert ids(pages) == BIG + SEEDED  # each once, in order
    assert {(page.sequence, page.epoch) for page in pages} == {(pages[0].sequence, pages[0].epoch)}


async def test_a_page_size_cuts_before_the_bytes_do(big: World) -> None:
    pages = await listing(big, await caller(big, "bob"), page_size=7)

    assert [len(page.items) for page in pages] == [7] * 15 + [1]
    assert ids(pages) == BIG + SEEDED


async def test_changes_stop_at_3_mib_with_more_to_come_from_the_cursor(big: World) -> None:
    bob = await caller(big, "bob")
    sync = big.platform.sync
    pages = [await sync.list_changes(bob, VAULT, 0, 0)]
    while pages[-1].has_more:
        pages.append(await sync.list_changes(bob, VAULT, pages[-1].cursor, 0, pages[-1].epoch))
        assert len(pages) < 10

    encoded = [changes_response(VAULT, page, retention=RETENTION).ByteSize() for page in pages]
    assert max(encoded) <= PAGE_BYTES
    assert len(pages[0].changes) < 100
    assert pages[0].has_more
    assert [c.item.item_id for page in pages for c in page.changes] == SEEDED + BIG
    assert [c.sequence for page in pages for c in page.changes] == list(range(1, len(SEEDED) + COUNT + 1))
    assert pages[0].cursor == pages[0].changes[-1].sequence


async def test_each_watch_message_stops_at_3_mib(big: World) -> None:
    watch = big.platform.sync.watch_changes(await caller(big, "bob"), VAULT, 0)
    messages: list[ListedChanges] = []
    try:
        while sum(len(m.changes) for m in messages) < len(SEEDED) + COUNT:
            messages.append(await asyncio.wait_for(anext(watch), STEP))
    finally:
        await watch.aclose()

    assert len(messages) >= 2
    assert len(messages[0].changes) < 100
    assert max(watch_message(VAULT, m, retention=RETENTION).ByteSize() for m in messages) <= PAGE_BYTES
    assert [c.item.item_id for m in messages for c in m.changes] == SEEDED + BIG


async def test_an_element_alone_over_the_bound_is_still_a_page(clock: FakeClock) -> None:
    """Never an empty page that would not move the listing on: the contract's limits keep an item
    far below 3 MiB, but an element the sizes say is larger still comes, alone."""

    class Huge(EncodedSizes):
        def item(self, item: Item) -> int:
            return PAGE_BYTES + 1

        def change(self, change: ItemChange) -> int:
            return PAGE_BYTES + 1

    platform = Platform.build(MemoryStore(), PEPPER, clock)
    world = await World.seed(platform)
    object.__setattr__(platform.vault, "_sizes", Huge())
    object.__setattr__(platform.sync, "_sizes", Huge())
    bob = await caller(world, "bob")

    pages = await listing(world, bob, page_size=0)
    changes = await platform.sync.list_changes(bob, VAULT, 0, 0)

    assert [len(page.items) for page in pages] == [1] * len(SEEDED)
    assert ids(pages) == SEEDED
    assert (len(changes.changes), changes.cursor, changes.has_more) == (1, 1, True)


async def test_a_page_of_tokens_stops_at_its_bytes_too(world: World, clock: FakeClock) -> None:
    """Tokens are small (a page of 1000 takes well under 3 MiB): the cut is shown with sizes that
    make three tokens fill a page, through the same helper as every other listing."""

    class Heavy(EncodedSizes):
        def token(self, record: TokenRecord, role: Role) -> int:
            return PAGE_BYTES // 3

    alice = await caller(world, "alice")
    principal = await world.platform.store.get_principal("alice")
    assert principal is not None
    for _ in range(7):
        clock.advance(1)
        await world.platform.issuer.issue(principal, 600)
    tokens = TokenManagement(world.platform.store, PageTokens(b"a-page-token-key-of-thirty-two-b"), clock, Heavy())

    pages = [await tokens.list_tokens(alice, "", 0, "")]
    while pages[-1].next_page_token:
        pages.append(await tokens.list_tokens(alice, "", 0, pages[-1].next_page_token))

    assert [len(page.tokens) for page in pages] == [2, 2, 2, 2]  # 3 would exceed the page with its frame
    listed = [listed.record.token_id for page in pages for listed in page.tokens]
    assert len(listed) == len(set(listed)) == 8  # alice's own token and the seven issued, each once
    assert all(tokens_response(page).ByteSize() <= PAGE_BYTES for page in pages)
