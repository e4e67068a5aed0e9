"""Schema versions: applied by migrate, checked at open."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from zkplatform.store import open_store
from zkplatform.store.migrations import SchemaError, latest


async def test_sqlite_migrates_once_and_then_opens(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/zk.db"
    with pytest.raises(SchemaError, match=rf"not initialised.*admin --store {url} migrate"):
        await open_store(url)

    store = await open_store(url, check_schema=False)
    assert await store.migrate() == list(range(1, latest("sqlite") + 1))
    assert await store.migrate() == []
    await store.close()

    opened = await open_store(url)
    assert await opened.schema_version() == latest("sqlite")
    await opened.close()


async def test_sqlite_refuses_a_newer_schema(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/zk.db"
    store = await open_store(url, check_schema=False)
    await store.migrate()
    await store.close()
    with sqlite3.connect(tmp_path / "zk.db") as conn:
        conn.execute("UPDATE schema_version SET version = 99")

    with pytest.raises(SchemaError, match="newer"):
        await open_store(url)


async def test_sqlite_store_is_durable_wal(tmp_path: Path) -> None:
    store = await open_store(f"sqlite:///{tmp_path}/zk.db", check_schema=False)
    await store.migrate()
    await store.close()

    with sqlite3.connect(tmp_path / "zk.db") as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
