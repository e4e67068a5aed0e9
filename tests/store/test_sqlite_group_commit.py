"""The SQLite store commits concurrent writes together: one fsync for many use cases."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from zkplatform.domain.models import EncryptedPayload, Item, Principal, Role, Tenant, Tombstone, Vault
from zkplatform.store.sqlite import SQLiteStore

NOW = 1_800_000_000


def _item(number: int) -> Item:
    payload = EncryptedPayload("A256GCM", "bm9uY2U", "", "Y2lwaGVy", 1)
    return Item(f"i{number}", "t1", "v1", 1, "note", "th", NOW - 10, payload, ())


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SQLiteStore]:
    opened = await SQLiteStore.open(tmp_path / "store.db", check_schema=False)
    await opened.migrate()
    await opened.add_tenant(Tenant("t1"))
    await opened.add_principal(Principal("p1", "t1", Role.OWNER, Role.OWNER.default_scopes))
    await opened.add_vault(Vault("v1", "t1", frozenset({"p1"})))
    await opened.add_items([_item(n) for n in range(100)])
    yield opened
    await opened.close()


def _count_commits(store: SQLiteStore) -> list[str]:
    statements: list[str] = []
    conn = store._engine._write_conn
    assert conn is not None
    conn.set_trace_callback(statements.append)
    return statements


async def test_concurrent_deletes_share_commits(store: SQLiteStore) -> None:
    statements = _count_commits(store)

    outcomes = await asyncio.gather(*(store.delete_item("v1", f"i{n}", 1, NOW) for n in range(100)))

    assert sorted(o.sequence for o in outcomes if isinstance(o, Tombstone)) == list(range(101, 201))
    commits = statements.count("COMMIT")
    # One transaction per use case would be 100 commits, 100 fsyncs.
    assert 1 <= commits <= 3, commits


async def test_a_cancelled_caller_leaves_its_change_whole(store: SQLiteStore) -> None:
    first = asyncio.ensure_future(store.delete_item("v1", "i1", 1, NOW))
    cancelled = asyncio.ensure_future(store.delete_item("v1", "i2", 1, NOW))
    await asyncio.sleep(0)
    cancelled.cancel()
    await first

    # The delete of i2 ran or not, but whole: never a live item with a new sequence, nor a half tombstone.
    outcome = await store.delete_item("v1", "i2", 1, NOW)
    assert isinstance(outcome, Tombstone)
    assert outcome.item.version == 2
    assert outcome.item.payload is None
    assert await store.vault_sequence("v1") == 102
