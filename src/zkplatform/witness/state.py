"""What a witness remembers: for each log (its origin), the size and root hash of the latest
checkpoint it cosigned. In a SQLite file for `zkplatform witness serve`, in memory for the
development witness and the tests.

C2SP tlog-witness requires that checking a request against the held checkpoint and storing the
new one be one atomic step (else two requests could roll the log back), and that the new
checkpoint be on disk before the cosignature is answered (else a witness that crashed could
cosign a fork of what it already cosigned). `update` is that step: it hands the held checkpoint
to a decision, and stores what the decision returns before it returns.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Protocol, TypeVar

from zkplatform_tlog.merkle import EMPTY_ROOT

R = TypeVar("R")

BUSY_TIMEOUT_MS: Final = 10_000  # how long a request waits for another's transaction on the file


@dataclass(frozen=True, slots=True)
class Held:
    """The latest checkpoint a witness cosigned for one origin."""

    size: int
    root_hash: bytes


# What a witness holds for a log it never cosigned: the spec's old size 0 (the empty tree).
NOTHING_HELD: Final = Held(0, EMPTY_ROOT)

# A decision on the held checkpoint: the checkpoint to hold from now on (None: keep the held
# one), and what the caller is answered.
Decide = Callable[[Held], tuple[Held | None, R]]


class StateError(Exception):
    """The state cannot be used (now); the message says which and why, in one line."""


class WitnessState(Protocol):
    async def held(self, origin: str) -> Held:
        """The latest checkpoint cosigned for `origin` (NOTHING_HELD for none)."""
        ...

    async def update(self, origin: str, decide: Decide[R]) -> R:
        """Atomically, for requests on the same state from any task or process: call `decide` with
        the held checkpoint of `origin`, store the checkpoint it returns (if any), and answer the
        rest of its result once that is stored."""
        ...


class MemoryState:
    """The state in this process's memory, gone when it ends."""

    def __init__(self) -> None:
        self._held: dict[str, Held] = {}

    async def held(self, origin: str) -> Held:
        return self._held.get(origin, NOTHING_HELD)

    async def update(self, origin: str, decide: Decide[R]) -> R:
        # No await between the read and the write: no other task of the loop runs in between.
        new, answer = decide(self._held.get(origin, NOTHING_HELD))
        if new is not None:
            self._held[origin] = new
        return answer


_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS checkpoints (
    origin TEXT PRIMARY KEY,
    size TEXT NOT NULL,  -- decimal: a tree size may exceed SQLite's signed 64-bit integers
    root_hash BLOB NOT NULL
) STRICT
"""


class SqliteState:
    """The state in a SQLite file, created on first use. WAL with synchronous=FULL: a committed
    checkpoint survives a crash of the process or the host. Each update is one `BEGIN IMMEDIATE`
    transaction on a connection of its own, in a thread: SQLite's lock on the file serializes the
    updates of every thread and process, whatever the origin."""

    def __init__(self, path: Path) -> None:
        self._path = path

    @classmethod
    def open(cls, path: Path) -> SqliteState:
        """The state in `path`, made if it does not exist; StateError if it cannot be used."""
        state = cls(path)
        try:
            with closing(state._connect()) as connection:
                connection.execute("PRAGMA journal_mode=WAL")
                connection.execute(_SCHEMA)
                connection.execute("SELECT count(*) FROM checkpoints").fetchone()
        except sqlite3.Error as error:
            msg = f"cannot use {path} as the witness's state ({error})"
            raise StateError(msg) from None
        return state

    async def held(self, origin: str) -> Held:
        try:
            return await asyncio.to_thread(self._read, origin)
        except sqlite3.Error as error:
            raise self._unusable(error) from None

    async def update(self, origin: str, decide: Decide[R]) -> R:
        try:
            return await asyncio.to_thread(self._update, origin, decide)
        except sqlite3.Error as error:  # locked past the busy timeout, a full disk, an I/O error
            raise self._unusable(error) from None

    def _unusable(self, error: sqlite3.Error) -> StateError:
        return StateError(f"the witness's state {self._path} cannot be used now ({error})")

    def _connect(self) -> sqlite3.Connection:
        # autocommit mode: the transactions are the explicit BEGIN IMMEDIATE ... COMMIT below
        connection = sqlite3.connect(self._path, isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000)
        connection.execute("PRAGMA synchronous=FULL")
        return connection

    def _read(self, origin: str) -> Held:
        with closing(self._connect()) as connection:
            return _held(connection, origin)

    def _update(self, origin: str, decide: Decide[R]) -> R:
        with closing(self._connect()) as connection:
            connection.execute("BEGIN IMMEDIATE")
            try:
                new, answer = decide(_held(connection, origin))
                if new is not None:
                    connection.execute(
                        "INSERT INTO checkpoints (origin, size, root_hash) VALUES (?, ?, ?)"
                        " ON CONFLICT (origin) DO UPDATE SET size = excluded.size, root_hash = excluded.root_hash",
                        (origin, str(new.size), new.root_hash),
                    )
                connection.execute("COMMIT")
            except BaseException:
                connection.execute("ROLLBACK")
                raise
            return answer


def _held(connection: sqlite3.Connection, origin: str) -> Held:
    row = connection.execute("SELECT size, root_hash FROM checkpoints WHERE origin = ?", (origin,)).fetchone()
    return NOTHING_HELD if row is None else Held(int(row[0]), bytes(row[1]))
