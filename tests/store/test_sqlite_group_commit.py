"""The SQLite store commits concurrent writes together: one fsync for many use cases."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import threading
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.actors import OPERATOR, at
from tests.store.stores import closing, sqlite_file
from zkplatform.domain.models import EncryptedPayload, Item, Principal, Role, Tenant, Tombstone, Vault
from zkplatform.store.sqlite import SQLiteStore

NOW = 1_800_000_000


def _item(number: int) -> Item:
    payload = EncryptedPayload("A256GCM", "bm9uY2U", "", "Y2lwaGVy", 1)
    return Item(f"i{number}", "t1", "v1", 1, "note", "th", NOW - 10, payload, ())


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SQLiteStore]:
    async with closing(SQLiteStore.open(tmp_path / "store.db", check_schema=False)) as opened:
        await opened.migrate()
        await opened.add_tenant(Tenant("t1"), OPERATOR)
        await opened.add_principal(Principal("p1", "t1", Role.OWNER, Role.OWNER.default_scopes), OPERATOR)
        await opened.add_vault(Vault("v1", "t1", frozenset({"p1"})), OPERATOR)
        await opened.add_items([_item(n) for n in range(101)], OPERATOR)
        yield opened


def _trace(store: SQLiteStore, began: threading.Event) -> list[str]:
    """The statements the store's writer runs from now on; `began` is set when one begins a transaction."""
    statements: list[str] = []

    def trace(statement: str) -> None:
        statements.append(statement)
        if statement == "BEGIN IMMEDIATE":
            began.set()

    conn = store._engine._write_conn
    assert conn is not None
    conn.set_trace_callback(trace)
    return statements


async def test_writes_arriving_during_a_commit_share_the_next_one(store: SQLiteStore, tmp_path: Path) -> None:
    """What arrives while a transaction is under way goes, whole, into the next one.

    Another connection holds the file's write lock, so the first delete's transaction
    waits until the test lets it go: the 100 deletes that arrive meanwhile are known to
    wait, however busy the machine, and must then commit together.
    """
    began = threading.Event()
    statements = _trace(store, began)
    with contextlib.closing(sqlite3.connect(tmp_path / "store.db", isolation_level=None)) as other:
        other.execute("BEGIN IMMEDIATE")
        first = asyncio.ensure_future(store.delete_item("v1", "i0", 1, at(NOW)))
        await asyncio.to_thread(began.wait)  # the writer is in the first transaction, waiting for the lock
        waiting = [asyncio.ensure_future(store.delete_item("v1", f"i{n}", 1, at(NOW))) for n in range(1, 101)]
        # Callbacks run in the order they were scheduled: the lock goes once all 100 have asked.
        asyncio.get_running_loop().call_soon(other.execute, "COMMIT")
        outcomes = await asyncio.gather(first, *waiting)

    assert sorted(o.sequence for o in outcomes if isinstance(o, Tombstone)) == list(range(102, 203))
    assert statements.count("BEGIN IMMEDIATE") == statements.count("COMMIT") == 2  # the first alone, then the rest
    with sqlite_file(tmp_path / "store.db") as reader:  # on disk, for any other process to read
        assert reader.execute("SELECT count(*) FROM items WHERE deleted = 1").fetchone() == (101,)


async def test_a_cancelled_caller_leaves_its_change_whole(store: SQLiteStore) -> None:
    first = asyncio.ensure_future(store.delete_item("v1", "i1", 1, at(NOW)))
    cancelled = asyncio.ensure_future(store.delete_item("v1", "i2", 1, at(NOW)))
    await asyncio.sleep(0)
    cancelled.cancel()
    await first

    # The delete of i2 ran or not, but whole: never a live item with a new sequence, nor a half tombstone.
    outcome = await store.delete_item("v1", "i2", 1, at(NOW))
    assert isinstance(outcome, Tombstone)
    assert outcome.item.version == 2
    assert outcome.item.payload is None
    assert await store.vault_sequence("v1") == 103
