"""The SQLite store: the embedded default.

The SQL of each use case, run by SQLiteEngine (sqlite_engine.py): every write
use case is one synchronous function of the connection, in a transaction that
commits (to disk) before it is answered; reads see the last committed state.

One module a port (directory, items, tokens, limits, audit, key_log), each a mixin over the
one Database (database.py: the engine, the change feed and the SQL more than one port shares),
composed here into the one SQLiteStore with its schema (schema.py): a use case is one function
of one connection whichever port it belongs to, and several change what others read in the
same transaction (disabling a principal revokes its tokens, every change records its audit
events), which separate objects would each have to reach into.
"""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

from zkplatform.store.migrations import check_version
from zkplatform.store.notify import ChangeFeed
from zkplatform.store.sqlite.audit import SQLiteAudit
from zkplatform.store.sqlite.directory import SQLiteDirectory
from zkplatform.store.sqlite.items import SQLiteItems
from zkplatform.store.sqlite.key_log import SQLiteKeyLog
from zkplatform.store.sqlite.limits import SQLiteLimits
from zkplatform.store.sqlite.schema import DIALECT, SQLiteSchema, _stored_version, _unavailable, _url
from zkplatform.store.sqlite.tokens import SQLiteTokens
from zkplatform.store.sqlite_engine import BUSY_TIMEOUT_MS


class SQLiteStore(SQLiteSchema, SQLiteDirectory, SQLiteItems, SQLiteTokens, SQLiteLimits, SQLiteAudit, SQLiteKeyLog):
    @classmethod
    async def open(
        cls, path: Path, *, check_schema: bool = True, busy_timeout_ms: int = BUSY_TIMEOUT_MS
    ) -> SQLiteStore:
        """Open the store at path; StoreOpenError when that cannot be a SQLite
        database, SchemaError (unless told not to check) when it is not at this
        build's schema. A refused open leaves the disk as it found it."""
        with _unavailable(path):
            if check_schema:
                # Before the engine, which creates the directory and the file and turns on WAL.
                check_version(await asyncio.to_thread(_stored_version, path), DIALECT, _url(path))
            store = cls(path, busy_timeout_ms)
            try:
                await store._engine.open()
            except BaseException:
                await store.close()
                raise
        return store

    async def close(self) -> None:
        await self._poller.stop()
        await self._background.drain()
        await self._engine.close()

    def change_feed(self) -> ChangeFeed:
        return self._feed

    async def ping(self) -> None:
        """A read of the file on the reader connection (StoreUnavailable when it cannot be read)."""
        await self._read(_ping)


def _ping(conn: sqlite3.Connection) -> None:
    conn.execute("PRAGMA schema_version").fetchone()  # the database header, read from the file
