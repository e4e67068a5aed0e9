"""What only the SQLite store can get wrong about items: its connections, and two
stores (two processes) on one file."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.actors import OPERATOR, at
from tests.contract.test_item_changes import new, replacing
from tests.contract.test_store_contract import token
from tests.store.stores import closing, sqlite_file
from zkplatform.domain.models import ItemChange, Principal, Role, Tenant, Vault
from zkplatform.domain.ports.items import Conflict, Created, Existing
from zkplatform.store.sqlite import SQLiteStore

NOW = 1_800_000_000
Stores = tuple[SQLiteStore, SQLiteStore]


@pytest.fixture
async def stores(tmp_path: Path) -> AsyncIterator[Stores]:
    """Two stores on one file, as two worker processes have: the file's locks decide between them."""
    path = tmp_path / "store.db"
    async with contextlib.AsyncExitStack() as stack:
        first = await stack.enter_async_context(closing(SQLiteStore.open(path, check_schema=False)))
        await first.migrate()
        await first.add_tenant(Tenant("t1"), OPERATOR)
        await first.add_principal(Principal("p1", "t1", Role.OWNER, Role.OWNER.default_scopes), OPERATOR)
        await first.add_vault(Vault("v1", "t1", frozenset({"p1"})), OPERATOR)
        await first.add_items([new("i1"), new("i2")], OPERATOR)
        second = await stack.enter_async_context(closing(SQLiteStore.open(path)))
        yield first, second


async def test_updates_at_one_version_from_two_stores_make_one_change(stores: Stores) -> None:
    outcomes = await asyncio.gather(
        *(stores[n % 2].update_item("v1", "i1", 1, replacing(str(n)), at(NOW)) for n in range(40))
    )

    changes = [o for o in outcomes if isinstance(o, ItemChange)]
    assert len(changes) == 1
    (winner,) = changes
    assert (winner.item.version, winner.sequence) == (2, 3)
    assert all(o == Conflict(winner) for o in outcomes if o is not winner)
    assert await stores[1].vault_sequence("v1") == 3


async def test_creates_of_one_id_from_two_stores_store_one(stores: Stores) -> None:
    outcomes = await asyncio.gather(*(stores[n % 2].create_item(new("n1", tag=str(n)), OPERATOR) for n in range(40)))

    created = [o for o in outcomes if isinstance(o, Created)]
    assert len(created) == 1
    assert all(o == Existing(created[0].change) for o in outcomes if not isinstance(o, Created))
    assert await stores[0].vault_sequence("v1") == 3


async def test_a_page_and_its_sequence_come_from_one_snapshot(stores: Stores, tmp_path: Path) -> None:
    """A change that commits between the listing's two reads shows in neither: the items and
    the sequence are both from before it. The change is committed by another connection from
    inside the read connection's trace hook, just as the items' SELECT starts."""
    store = stores[0]
    conn = store._engine._read_conn
    assert conn is not None
    committed: list[str] = []

    def commit_a_change_meanwhile(statement: str) -> None:
        if statement.startswith("SELECT vault_id, item_id") and not committed:
            with sqlite_file(tmp_path / "store.db") as other:
                other.execute("UPDATE vaults SET sequence = sequence + 1 WHERE vault_id = 'v1'")
                other.execute(
                    "INSERT INTO items SELECT vault_id, 'i0', tenant_id, version, kind, title_hash, updated_at,"
                    " payload, wrapped_keys, deleted, 3 FROM items WHERE item_id = 'i1'"
                )
            committed.append(statement)

    conn.set_trace_callback(commit_a_change_meanwhile)
    try:
        page = await store.list_items("v1", "", 10, show_deleted=False)
    finally:
        conn.set_trace_callback(None)

    assert committed
    assert ([i.item_id for i in page.items], page.sequence) == (["i1", "i2"], 2)
    after = await store.list_items("v1", "", 10, show_deleted=False)
    assert ([i.item_id for i in after.items], after.sequence) == (["i0", "i1", "i2"], 3)


async def test_lookups_see_at_once_what_the_other_store_committed(stores: Stores) -> None:
    """Lookups (a token, a vault, an item) run on a connection of their own, on the event
    loop: each must read the file as last committed, never a snapshot an earlier one left open."""
    first, second = stores
    for version in range(1, 6):
        assert (await second.get_item("v1", "i1") or new("none")).version == version
        await first.update_item("v1", "i1", version, replacing(str(version)), at(NOW))
        assert (await second.get_item("v1", "i1") or new("none")).version == version + 1
    assert await second.vault_sequence("v1") == 2 + 5

    await first.add_token(token("tok_1"), OPERATOR)
    found = await second.find_token_with_principal(token("tok_1").secret_hash)
    assert found is not None
    assert not found[0].revoked
    await first.revoke_token_tree("tok_1", OPERATOR)
    found = await second.find_token_with_principal(token("tok_1").secret_hash)
    assert found is not None
    assert found[0].revoked
    assert (await second.get_token("tok_1") or token("none")).revoked
