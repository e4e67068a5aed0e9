"""The SQLite store's schema: its version, its migrations, and the checks of a file before it is opened."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from zkplatform.store import StoreOpenError
from zkplatform.store.migrations import check_version, migrations
from zkplatform.store.sqlite.database import Database
from zkplatform.store.sqlite_engine import BUSY_TIMEOUT_MS
from zkplatform.store.statements import SQLITE as SQL

DIALECT = "sqlite"


def _url(path: Path) -> str:
    """The store URL of path, absolute: what to type whatever the working directory."""
    return f"sqlite:///{path.absolute()}"


@contextmanager
def _unavailable(path: Path) -> Iterator[None]:
    """Errors that say the store cannot be opened at all, as StoreOpenError."""
    try:
        yield
    except OSError as error:  # creating the directory
        msg = (
            f"cannot create the directory of the SQLite store {path.absolute()} ({error.strerror}): choose another path"
        )
        raise StoreOpenError(msg) from None
    except sqlite3.DatabaseError as error:
        if error.sqlite_errorcode == sqlite3.SQLITE_NOTADB:
            msg = f"{path.absolute()} is not a SQLite database: choose another path, or move that file away"
        else:
            msg = f"cannot open the SQLite store {path.absolute()} ({error}): check the path and its permissions"
        raise StoreOpenError(msg) from None


def _stored_version(path: Path) -> int | None:
    """The schema version of the database at path, creating nothing: None when there is none."""
    if not path.exists():
        for parent in path.absolute().parents:  # what migrate would have to create, it must be able to
            if parent.exists():
                if not parent.is_dir():
                    msg = f"cannot create the directory of the SQLite store {path.absolute()}: {parent} is a file"
                    raise StoreOpenError(msg)
                break
        return None
    conn = sqlite3.connect(f"{path.absolute().as_uri()}?mode=rw", uri=True)  # rw: never creates the file
    try:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        return _schema_version(conn)
    finally:
        conn.close()


def _schema_version(conn: sqlite3.Connection) -> int | None:
    if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'schema_version'").fetchone():
        return None
    row = conn.execute(SQL.schema_version).fetchone()
    return None if row is None else int(row[0])


def _statements(sql: str) -> list[str]:
    """The statements of a migration file, each with its comments, in order.

    A `;` ends a statement only where SQLite says one is complete: not inside a
    string literal, a comment or a trigger's body.
    """
    *pieces, last = sql.split(";")
    statements: list[str] = []
    current = ""
    for piece in pieces:
        current += piece + ";"
        if sqlite3.complete_statement(current):
            statements.append(current.strip())
            current = ""
    if (current + last).strip():  # a last statement without its `;`; comments alone execute as nothing
        statements.append((current + last).strip())
    return statements


class SQLiteSchema(Database):
    async def schema_version(self) -> int | None:
        return await self._read(_schema_version)

    async def migrate(self) -> list[int]:
        """Apply the missing migrations, each in its own transaction; the versions applied."""

        def apply(conn: sqlite3.Connection) -> list[int]:
            conn.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL) STRICT")
            row = conn.execute(SQL.schema_version).fetchone()
            current = 0 if row is None else int(row[0])
            applied = []
            for migration in migrations(DIALECT):
                if migration.version <= current:
                    continue
                for statement in _statements(migration.sql):
                    conn.execute(statement)
                conn.execute(SQL.clear_schema_version)
                conn.execute(SQL.set_schema_version, (migration.version,))
                applied.append(migration.version)
            check_version(applied[-1] if applied else current, DIALECT, _url(self._path))
            return applied

        return await self._write(apply)
