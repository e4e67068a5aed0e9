"""How the SQLite store talks to its file: two connections, two threads, group commit.

- Writes run on one connection in one dedicated thread. Each use case is a
  function of the connection that runs synchronously there, so no other task of
  the process can interleave with it, and `BEGIN IMMEDIATE` plus SQLite's file
  locks keep several worker processes on one file correct.
- Group commit: the use cases that arrive while a transaction is being written
  wait together and then run in the next transaction, each inside its own
  savepoint, so that one failing use case rolls back only itself. The
  transaction commits (WAL, `synchronous=FULL`: on disk) before any of them is
  answered. A commit costs one fsync whatever it holds; without grouping, the
  fsync rate would be the write rate of the whole file.
- The busy timeout bounds a use case's wait for the file's write lock from the
  moment it was asked, not each transaction's: one that queued behind a
  transaction that waited for the lock waits only what is left of its own
  timeout, so that a call behind a held lock is answered (StoreUnavailable)
  after the busy timeout, not after two or three of them in a row.
- Reads run on a second connection in a thread of their own: in WAL mode a read
  sees the last committed state and never waits for a writer, nor for a batch's
  fsync. What a read returns waits in memory until its caller's task runs again,
  and the thread can read faster than the event loop answers: many large pages
  asked at once piled up in memory as rows nobody had taken yet (issue 39). So
  at most READS_AHEAD reads are queued or done and not yet taken; the others
  wait their turn before reading anything.
- Lookups (a row or two by key: the token of every call, a vault, an item) run on a
  third connection, on the event loop itself: handing one to a thread and back costs
  far more than the lookup itself. They wait for
  nothing either: in WAL mode the only wait left to a reader is another connection
  recovering the WAL after a crash, as long as reading the WAL once.
- A file that cannot be used now (locked by another process past the busy
  timeout, a full disk, an I/O error) fails a use case with the domain's
  StoreUnavailable instead of the driver's error; an error of the SQL itself (a
  constraint, a bug) stays what it is.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from time import monotonic, perf_counter
from typing import Any, TypeVar

from zkplatform.domain.errors import StoreUnavailable
from zkplatform.observability import probes

log = logging.getLogger(__name__)

T = TypeVar("T")
BUSY_TIMEOUT_MS = 30_000  # how long a statement waits for another connection's lock before it fails
MAX_BATCH = 256  # use cases per transaction: bounds how long one commit holds the file's write lock
READS_AHEAD = 2  # the read in the thread and the next one, so that the thread never waits for the loop

Work = Callable[[sqlite3.Connection], Any]
# SQLite's primary result codes that say the file cannot be used now, not that a statement is wrong:
# busy or locked past the busy timeout, read-only, an I/O error, a full disk, a file that cannot be
# opened, a WAL locking protocol error.
_UNAVAILABLE_CODES = frozenset(
    {
        sqlite3.SQLITE_BUSY,
        sqlite3.SQLITE_LOCKED,
        sqlite3.SQLITE_READONLY,
        sqlite3.SQLITE_IOERR,
        sqlite3.SQLITE_FULL,
        sqlite3.SQLITE_CANTOPEN,
        sqlite3.SQLITE_PROTOCOL,
    }
)


@dataclass(frozen=True, slots=True)
class _Failed:
    error: BaseException


@dataclass(frozen=True, slots=True)
class _Asked:
    """A write use case waiting for its transaction: the lock must be had by `deadline` (a
    monotonic time: when it was asked, plus the busy timeout), or it fails."""

    work: Work
    done: asyncio.Future[Any]
    deadline: float


class SQLiteEngine:
    def __init__(self, path: Path, busy_timeout_ms: int = BUSY_TIMEOUT_MS) -> None:
        self._path = path
        self._busy_timeout_ms = busy_timeout_ms
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sqlite-write")
        self._reader = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sqlite-read")
        self._write_conn: sqlite3.Connection | None = None
        self._read_conn: sqlite3.Connection | None = None
        self._lookup_conn: sqlite3.Connection | None = None
        self._waiting: list[_Asked] = []
        self._committing = False
        self._reads = asyncio.Semaphore(READS_AHEAD)

    async def open(self) -> None:
        loop = asyncio.get_running_loop()
        self._write_conn = await loop.run_in_executor(self._writer, self._connect, True)
        self._read_conn = await loop.run_in_executor(self._reader, self._connect, False)
        self._lookup_conn = await loop.run_in_executor(self._reader, self._connect, False)

    def _connect(self, writer: bool) -> sqlite3.Connection:
        if writer:
            self._path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(self._path, isolation_level=None, check_same_thread=False)
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(self._busy_timeout_ms)}")
            conn.execute("PRAGMA journal_mode = WAL")  # fails here on a file that is not a database
            conn.execute("PRAGMA synchronous = FULL")
            conn.execute("PRAGMA foreign_keys = ON")
        except BaseException:
            conn.close()
            raise
        return conn

    async def close(self) -> None:
        loop = asyncio.get_running_loop()
        for executor, conn in ((self._writer, self._write_conn), (self._reader, self._read_conn)):
            if conn is not None:
                await loop.run_in_executor(executor, conn.close)
            executor.shutdown(wait=True)
        if self._lookup_conn is not None:
            self._lookup_conn.close()
        self._write_conn = self._read_conn = self._lookup_conn = None

    async def read(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        conn = _open(self._read_conn)
        async with self._reads:
            started = perf_counter()
            try:
                return await asyncio.get_running_loop().run_in_executor(self._reader, fn, conn)
            except sqlite3.OperationalError as error:
                raise _unavailable(error) from error
            finally:
                probes.store_operation("sqlite", "read", started)

    def lookup(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """fn on the lookup connection, at once: for reads of a few rows by key, never a scan."""
        conn = _open(self._lookup_conn)
        started = perf_counter()
        try:
            return fn(conn)
        except sqlite3.OperationalError as error:
            raise _unavailable(error) from error
        finally:
            probes.store_operation("sqlite", "read", started)

    async def write(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """fn in a transaction: committed whole, or rolled back whole (alone, if it fails)."""
        _open(self._write_conn)
        loop = asyncio.get_running_loop()
        done: asyncio.Future[T] = loop.create_future()
        self._waiting.append(_Asked(fn, done, monotonic() + self._busy_timeout_ms / 1000))
        if not self._committing:
            self._committing = True
            loop.create_task(self._commit_waiting())  # noqa: RUF006 # it clears _committing itself; errors go to the futures
        started = perf_counter()
        try:
            return await done
        except sqlite3.OperationalError as error:
            raise _unavailable(error) from error
        finally:
            probes.store_operation("sqlite", "write", started)

    async def _commit_waiting(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            while self._waiting:
                batch, self._waiting = self._waiting[:MAX_BATCH], self._waiting[MAX_BATCH:]
                probes.commit_batch(len(batch))
                try:
                    outcomes = await loop.run_in_executor(self._writer, self._transaction, batch)
                except BaseException as error:  # noqa: BLE001 # the commit failed: every use case in it failed
                    outcomes = [_Failed(error)] * len(batch)
                for asked, outcome in zip(batch, outcomes, strict=True):
                    if asked.done.done():  # its caller was cancelled; the change stands or falls with the batch
                        continue
                    if isinstance(outcome, _Failed):
                        asked.done.set_exception(outcome.error)
                    else:
                        asked.done.set_result(outcome)
        finally:
            self._committing = False

    def _transaction(self, batch: list[_Asked]) -> list[Any]:
        """The outcome of each use case of the batch, in its order: what it returned, or _Failed."""
        conn = _open(self._write_conn)
        outcomes: list[Any] = [None] * len(batch)
        running = list(range(len(batch)))
        # The lock, waited for until the earliest deadline of those still waiting; when it is not
        # had by then, those whose deadline has passed fail, and the others wait on for theirs.
        while (busy := self._begin(conn, min(batch[i].deadline for i in running))) is not None:
            now = monotonic()
            for i in running:
                if batch[i].deadline <= now:
                    outcomes[i] = _Failed(busy)
            running = [i for i in running if batch[i].deadline > now]
            if not running:
                return outcomes
        try:
            # Alone, a use case needs no savepoint: the transaction is one.
            if len(running) == 1:
                outcomes[running[0]] = batch[running[0]].work(conn)
            else:
                for i in running:
                    outcomes[i] = _in_savepoint(conn, batch[i].work)
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
        return outcomes

    def _begin(self, conn: sqlite3.Connection, deadline: float) -> sqlite3.OperationalError | None:
        """BEGIN IMMEDIATE, waiting for the write lock at most until `deadline`; the error when
        the file stayed locked (busy) until then. The statements after it wait as configured."""
        conn.execute(f"PRAGMA busy_timeout = {max(0, int((deadline - monotonic()) * 1000))}")
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as error:
            code = getattr(error, "sqlite_errorcode", None)
            if code is None or code & 0xFF != sqlite3.SQLITE_BUSY:  # the primary code of an extended one
                raise
            return error
        finally:
            conn.execute(f"PRAGMA busy_timeout = {int(self._busy_timeout_ms)}")
        return None


def _in_savepoint(conn: sqlite3.Connection, fn: Work) -> Any:
    conn.execute("SAVEPOINT use_case")
    try:
        result = fn(conn)
    except Exception as error:  # noqa: BLE001 # this use case fails alone; the others go on
        conn.execute("ROLLBACK TO use_case")
        conn.execute("RELEASE use_case")
        return _Failed(error)
    conn.execute("RELEASE use_case")
    return result


def _unavailable(error: sqlite3.OperationalError) -> Exception:
    """StoreUnavailable when the error says the file cannot be used now; else the error itself."""
    # The module's own errors (a text it cannot decode as UTF-8) carry no SQLite code at all.
    code = getattr(error, "sqlite_errorcode", None)
    if code is None or code & 0xFF not in _UNAVAILABLE_CODES:  # the primary code of an extended one
        return error
    log.warning("the SQLite store is unavailable: %s (%s)", error, error.sqlite_errorname)
    return StoreUnavailable()


def _open(conn: sqlite3.Connection | None) -> sqlite3.Connection:
    if conn is None:
        msg = "the SQLite store is closed"
        raise RuntimeError(msg)
    return conn
