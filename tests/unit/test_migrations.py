"""Schema versions: applied by migrate, checked at open."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.store.stores import closing, migrated, sqlite_file
from zkplatform.store import open_store
from zkplatform.store.migrations import SchemaError, latest
from zkplatform.store.sqlite.schema import _statements


async def test_sqlite_migrates_once_and_then_opens(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/zk.db"
    with pytest.raises(SchemaError, match=rf"not initialised.*admin --store {url} migrate"):
        await open_store(url)

    async with closing(open_store(url, check_schema=False)) as store:
        assert await store.migrate() == list(range(1, latest("sqlite") + 1))
        assert await store.migrate() == []

    async with closing(open_store(url)) as opened:
        assert await opened.schema_version() == latest("sqlite")


async def test_sqlite_refuses_a_newer_schema(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/zk.db"
    await migrated(url)
    with sqlite_file(tmp_path / "zk.db") as conn:
        conn.execute("UPDATE schema_version SET version = 99")

    with pytest.raises(SchemaError, match="newer"):
        await open_store(url)


async def test_sqlite_store_is_durable_wal(tmp_path: Path) -> None:
    await migrated(f"sqlite:///{tmp_path}/zk.db")

    with sqlite_file(tmp_path / "zk.db") as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)


MIGRATION_LIKE = """-- a header; with a semicolon, and 'quotes
CREATE TABLE notes (body TEXT NOT NULL DEFAULT ';', tail TEXT NOT NULL DEFAULT '--') STRICT; -- why; it matters
CREATE TABLE log (body TEXT NOT NULL) STRICT;
CREATE TRIGGER notes_logged AFTER INSERT ON notes BEGIN
    INSERT INTO log VALUES ('logged; ' || new.body);
END;
INSERT INTO notes (body) VALUES ('it''s; -- not a comment');
/* a block; comment */ INSERT INTO notes VALUES ('a;b', 'c--d')
-- the last statement has no semicolon
"""


def test_sqlite_migrations_split_where_sqlite_says_a_statement_ends() -> None:
    statements = _statements(MIGRATION_LIKE)

    assert len(statements) == 5
    with sqlite_file(Path(":memory:")) as conn:
        for statement in statements:
            conn.execute(statement)
        assert conn.execute("SELECT body, tail FROM notes").fetchall() == [
            ("it's; -- not a comment", "--"),
            ("a;b", "c--d"),
        ]
        assert conn.execute("SELECT body FROM log").fetchall() == [
            ("logged; it's; -- not a comment",),
            ("logged; a;b",),
        ]
