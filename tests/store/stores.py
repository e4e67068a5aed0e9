"""Opening stores in tests: each one closed however the test ends."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Iterator
from pathlib import Path
from typing import Protocol, TypeVar

from zkplatform.store import open_store


class _Closable(Protocol):
    async def close(self) -> None: ...


S = TypeVar("S", bound=_Closable)


@contextlib.asynccontextmanager
async def closing(opening: Awaitable[S]) -> AsyncIterator[S]:
    """`async with closing(open_store(url)) as store:` the store, closed on the way out."""
    store = await opening
    try:
        yield store
    finally:
        await store.close()


async def migrated(url: str) -> list[int]:
    """Bring the store at url to this build's schema; the versions applied."""
    async with closing(open_store(url, check_schema=False)) as store:
        return await store.migrate()


@contextlib.contextmanager
def sqlite_file(path: Path) -> Iterator[sqlite3.Connection]:
    """A plain connection to a SQLite file, committed and closed on the way out (sqlite3's
    own `with` commits but leaves the connection open)."""
    with contextlib.closing(sqlite3.connect(path)) as conn, conn:
        yield conn
