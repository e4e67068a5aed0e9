"""What every port of the SQLite store shares: the engine and its connections, the change feed, and
the SQL more than one port runs (audit events, request ids, refusals)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TypeVar

from zkplatform.domain import audit
from zkplatform.domain.audit import Actor, Event, Head
from zkplatform.domain.ports.refusals import AlreadyExists, UnknownReference
from zkplatform.domain.request_ids import A, Answer, Repeated, RequestId, Reused, oldest_kept
from zkplatform.store import rows
from zkplatform.store.background import Background
from zkplatform.store.notify import ChangeFeed, Marks, Poller
from zkplatform.store.sqlite_engine import BUSY_TIMEOUT_MS, SQLiteEngine
from zkplatform.store.statements import SQLITE as SQL

T = TypeVar("T")


def _as_stored(fn: Callable[[sqlite3.Connection], T]) -> Callable[[sqlite3.Connection], T]:
    """fn with text read as stored, for the rows whose columns' types are checked: a text that is
    no UTF-8 (written behind the store's back, SQLite keeping whatever a column is given) is read
    with its bytes escaped, for the check to name, where the driver would refuse the whole read."""

    def run(conn: sqlite3.Connection) -> T:
        conn.text_factory = _stored_text
        try:
            return fn(conn)
        finally:
            conn.text_factory = str

    return run


def _stored_text(data: bytes) -> str:
    return data.decode("utf-8", "surrogateescape")


def _earlier(
    conn: sqlite3.Connection, actor: Actor, request: RequestId | None, kind: type[A]
) -> Repeated[A] | Reused | None:
    """What the principal's record of the request id says, if it made one still kept. In the
    writer's transaction: a record committed by any process before it is seen here."""
    if request is None:
        return None
    row = conn.execute(SQL.request_record, (actor.principal_id, request.value, oldest_kept(actor.at))).fetchone()
    return None if row is None else rows.repeat_of(row, request, kind)


def _remember(conn: sqlite3.Connection, actor: Actor, request: RequestId | None, answer: Answer) -> None:
    """Record the answer of a call that succeeded under its request id (over a record past the
    retention period: _earlier found none kept)."""
    if request is not None:
        params = (actor.principal_id, request.value, request.fingerprint, actor.at, *rows.answer_params(answer))
        conn.execute(SQL.record_request, (*params, oldest_kept(actor.at))).fetchall()


def _record(conn: sqlite3.Connection, events: Iterable[Event]) -> None:
    """Append the events to their tenants' chains, in the use case's transaction (the writer
    holds the file's write lock, so no other process appends in between)."""
    for tenant_id, appended in audit.by_tenant(events):
        head = _head(conn.execute(SQL.audit_head, (tenant_id,)).fetchone(), tenant_id)
        records = list(audit.appended(head, tenant_id, appended))
        conn.executemany(SQL.add_audit_record, [rows.audit_record_params(r) for r in records])
        last = records[-1]
        conn.execute(SQL.set_audit_head, (tenant_id, last.sequence, last.hash))


def _head(row: tuple[object, ...] | None, tenant_id: str) -> Head | None:
    return rows.audit_head_from_row(row, tenant_id)


def _require(conn: sqlite3.Connection, query: str, params: tuple[object, ...], missing: str) -> None:
    if conn.execute(query, params).fetchone() is None:
        raise UnknownReference(missing)


def _insert(conn: sqlite3.Connection, statement: str, params: tuple[object, ...], what: str) -> None:
    try:
        conn.execute(statement, params)
    except sqlite3.IntegrityError as error:
        if "UNIQUE" in str(error) or "PRIMARY KEY" in str(error):
            raise AlreadyExists(f"{what} already exists") from None
        raise UnknownReference(f"{what} refers to something that does not exist") from None


class Database:
    """The SQLite file this process uses: its engine, its background writes and its change feed."""

    def __init__(self, path: Path, busy_timeout_ms: int = BUSY_TIMEOUT_MS) -> None:
        self._path = path
        self._engine = SQLiteEngine(path, busy_timeout_ms)
        self._read = self._engine.read
        self._lookup = self._engine.lookup  # a few rows by key: on the event loop (sqlite_engine.py)
        self._write = self._engine.write
        self._background = Background("recording a token's last use")
        # Other processes on the file are seen by polling, only while watches are open.
        self._poller = Poller(lambda: self._feed, self._marks_if_changed)
        self._feed = ChangeFeed(on_first=self._poller.start, on_last=self._poller.stop)
        self._data_version: int | None = None

    def _changed(self, vault_id: str, sequence: int) -> None:
        """This worker's watches learn of its own changes at once, not at the next poll (which
        then leaves them be)."""
        self._feed.notify(vault_id)
        self._poller.saw(vault_id, sequence)

    async def _marks_if_changed(self, vault_ids: list[str]) -> Marks | None:
        """The marks of these vaults and the count of revocations (migration 0005), if anything
        committed to the file since the last call (None otherwise): `PRAGMA data_version` of
        the read connection moves with every commit of another connection, this process's
        writer included, and costs no I/O."""

        def check(conn: sqlite3.Connection) -> Marks | None:
            (version,) = conn.execute("PRAGMA data_version").fetchone()
            if version == self._data_version:
                return None
            self._data_version = version
            conn.execute("BEGIN")  # the vaults and the revocations from one snapshot
            try:
                among = ", ".join("?" * len(vault_ids))
                found = conn.execute(
                    f"SELECT vault_id, sequence, membership_mark FROM vaults WHERE vault_id IN ({among})", vault_ids
                ).fetchall()
                (revocations,) = conn.execute("SELECT total FROM token_revocations").fetchone()
            finally:
                conn.execute("COMMIT")
            return Marks({str(v): (int(seq), int(mark)) for v, seq, mark in found}, int(revocations))

        return await self._read(check)
