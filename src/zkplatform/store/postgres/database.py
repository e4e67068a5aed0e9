"""What every port of the PostgreSQL store shares: its pool and the calls' connections, transactions
and snapshots, and the SQL more than one port runs (audit events, request ids, locks, refusals)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import psycopg
from psycopg import errors
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from zkplatform.domain import audit
from zkplatform.domain.audit import Actor, Event
from zkplatform.domain.errors import StoreBusy, StoreUnavailable
from zkplatform.domain.ports.refusals import AlreadyExists, UnknownReference
from zkplatform.domain.request_ids import A, Answer, Repeated, RequestId, Reused, oldest_kept
from zkplatform.observability import probes
from zkplatform.store import display_url, rows
from zkplatform.store.background import Background
from zkplatform.store.notify import ChangeFeed, Listener
from zkplatform.store.postgres.connection import Conn, _BusyLog, _one_line, _Pinger, _unreachable, log
from zkplatform.store.statements import POSTGRESQL as SQL

T = TypeVar("T")
# Seconds a call waits for a pooled connection, while other calls hold fewer than all of them,
# before the database is pinged: a pool that is making a connection makes it in milliseconds.
SUSPECT_AFTER = 0.25


class Database:
    """The pool of connections this worker uses, and how a call gets one of them."""

    def __init__(self, pool: AsyncConnectionPool[Conn], url: str) -> None:
        self._pool = pool
        self._url = display_url(url)
        self._held = 0  # pooled connections held by calls now: all of them held is overload, not an outage
        self._busy = _BusyLog(self._url, pool.max_size)
        self._pinger = _Pinger(url, self._url)
        self._waiting: set[asyncio.Timeout] = set()  # of the calls waiting for a pooled connection
        self._suspicion: asyncio.Task[None] | None = None  # the ping a long wait asked for
        self._background = Background("recording a token's last use")
        # Changes of every worker and host arrive by LISTEN on one connection of this worker.
        self.listener = Listener(lambda: self._feed, url, self._url)
        self._feed = ChangeFeed(on_first=self.listener.start)
        self._epoch: tuple[str, float] | None = None  # the epoch last read, and when (monotonic)

    async def ping(self) -> None:
        """`SELECT 1` within PING_TIMEOUT, on the ping's own connection (never a pooled one, which
        calls may all hold): StoreUnavailable when the database cannot be reached, or did not
        answer in time."""
        started = time.perf_counter()
        try:
            await self._pinger.ping()
        except StoreUnavailable:
            # The calls waiting for a pooled connection would wait for their whole acquire timeout.
            now = asyncio.get_running_loop().time()
            for waiting in list(self._waiting):
                waiting.reschedule(now)
            raise
        finally:
            probes.store_operation("postgresql", "query", started)

    @asynccontextmanager
    async def _connection(self, wait: float | None = None) -> AsyncIterator[Conn]:
        """A pooled connection, in place of the driver's error: StoreBusy when other calls held
        every connection the pool may open until the wait (the pool's acquire timeout, unless
        `wait` says another) ran out; StoreUnavailable when the database cannot be reached (a
        ping said so while this waited) or no connection could be made in time."""
        try:
            async with contextlib.AsyncExitStack() as stack:
                conn = await self._acquire(stack, wait)
                self._held += 1
                try:
                    yield conn
                finally:
                    self._held -= 1
        except psycopg.OperationalError as error:  # PoolTimeout is one too
            if isinstance(error, PoolTimeout) and self._held >= self._pool.max_size:
                self._busy.refused()
                raise StoreBusy from error
            if not _unreachable(error):
                raise
            log.warning("the store %s is unavailable: %s", self._url, _one_line(error))
            raise StoreUnavailable from error

    async def _acquire(self, stack: contextlib.AsyncExitStack, wait: float | None) -> Conn:
        """The pool's connection, its context entered on `stack`; StoreUnavailable as soon as a
        ping finds the database unreachable while this waits (SUSPECT_AFTER asks for one)."""
        suspect = asyncio.get_running_loop().call_later(SUSPECT_AFTER, self._suspect)
        try:
            async with asyncio.timeout(None) as cut:  # its deadline set by a ping that failed
                self._waiting.add(cut)
                try:
                    # Cancelled while waiting, the pool keeps any connection it was handing over.
                    return await stack.enter_async_context(self._pool.connection(wait))
                finally:
                    self._waiting.discard(cut)
        except TimeoutError:
            if not cut.expired():
                raise
            raise StoreUnavailable from None
        finally:
            suspect.cancel()

    def _suspect(self) -> None:
        """A call has waited SUSPECT_AFTER for a connection: unless other calls hold every one
        (overload: StoreBusy in time), ask the database whether it answers, once at a time."""
        if self._held >= self._pool.max_size or (self._suspicion is not None and not self._suspicion.done()):
            return
        self._suspicion = asyncio.get_running_loop().create_task(self._ping_for_the_waiting())

    async def _ping_for_the_waiting(self) -> None:
        try:
            await self.ping()
        except StoreUnavailable:
            pass  # the waiting calls were failed; the ping logged why
        except Exception as error:  # noqa: BLE001 # the calls' own waits decide; this only says why
            log.warning("the store %s did not answer a ping as expected: %s", self._url, _one_line(error))

    async def _tx(self, fn: Callable[[Conn], Awaitable[T]]) -> T:
        """fn in one transaction: committed whole, or rolled back whole."""
        started = time.perf_counter()
        try:
            async with self._connection() as conn, conn.transaction():
                return await fn(conn)
        finally:
            probes.store_operation("postgresql", "transaction", started)

    async def _snapshot(self, fn: Callable[[Conn], Awaitable[T]]) -> T:
        """fn's reads in one transaction that sees one snapshot (REPEATABLE READ), and changes nothing."""
        started = time.perf_counter()
        try:
            async with self._connection() as conn, conn.transaction():
                await conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
                return await fn(conn)
        finally:
            probes.store_operation("postgresql", "snapshot", started)

    async def _one(self, query: str, params: Sequence[object] = ()) -> tuple[Any, ...] | None:
        started = time.perf_counter()
        try:
            async with self._connection() as conn:
                return await _fetchone(conn, query, params)
        finally:
            probes.store_operation("postgresql", "query", started)

    async def _all(self, query: str, params: Sequence[object] = ()) -> list[tuple[Any, ...]]:
        async with self._connection() as conn:
            return await (await conn.execute(query, params)).fetchall()


# A chain's head before its first event: sequence 0 and the hash that comes before event 1.
_NEW_AUDIT_HEAD = "INSERT INTO audit_heads (tenant_id, sequence, hash) VALUES (%s, 0, %s) ON CONFLICT DO NOTHING"
# Claim a request id for this call: (principal, request id, fingerprint, now, oldest kept) -> a
# row when it is this call's, a record past the retention period included (its answer cleared);
# no row when a record still kept holds it (which this locks, unchanged, until the commit).
_CLAIM_REQUEST = (
    "INSERT INTO request_ids (principal_id, request_id, fingerprint, recorded_at) VALUES (%s, %s, %s, %s)"
    " ON CONFLICT (principal_id, request_id) DO UPDATE SET fingerprint = excluded.fingerprint,"
    " recorded_at = excluded.recorded_at, "
    + ", ".join(f"{column} = NULL" for column in rows.ANSWER_COLUMNS.split(", "))
    + " WHERE request_ids.recorded_at < %s RETURNING 1"
)
# A claim's answer: (the answer's columns, principal, request id).
_SETTLE_REQUEST = (
    f"UPDATE request_ids SET ({rows.ANSWER_COLUMNS}) = ({', '.join(['%s'] * len(rows.ANSWER_COLUMNS.split(', ')))})"
    " WHERE principal_id = %s AND request_id = %s"
)
_DROP_REQUEST = "DELETE FROM request_ids WHERE principal_id = %s AND request_id = %s"


async def _claim(conn: Conn, actor: Actor, request: RequestId, kind: type[A]) -> Repeated[A] | Reused | None:
    """Make the request id this call's, as the transaction's first lock (None); or, when the
    principal's record of it is still kept, what that says. A concurrent call with the id
    waits here for the commit of the one that claimed it, then reads its record."""
    oldest = oldest_kept(actor.at)
    claim = (actor.principal_id, request.value, request.fingerprint, actor.at, oldest)
    if await _fetchone(conn, _CLAIM_REQUEST, claim) is not None:
        return None
    # Committed (the insert waited for that) with its answer, and locked by the insert until
    # this commits: a statement with a fresh snapshot reads it.
    row = await _fetchone(conn, SQL.request_record, (actor.principal_id, request.value, oldest))
    assert row is not None
    return rows.repeat_of(row, request, kind)


async def _settle(conn: Conn, actor: Actor, request: RequestId, answer: Answer | None) -> None:
    """The claim's end, before the commit: the answer of a call that succeeded, recorded; a
    failure's claim deleted, so that nothing stays of it."""
    key = (actor.principal_id, request.value)
    if answer is None:
        await conn.execute(_DROP_REQUEST, key)
    else:
        await conn.execute(_SETTLE_REQUEST, (*rows.answer_params(answer), *key))


async def _record(conn: Conn, events: Iterable[Event]) -> None:
    """Append the events to their tenants' chains in the use case's transaction, which locks
    each chain's head until it commits. One event: zk_audit_append (migration 0005), one round
    trip. More (an import, a revoked tree, a purge): the head locked and moved once, the chain
    computed here. Moving the head once per event would leave a new version of its row per
    event, which the next update of that row must walk past within one transaction: an import
    of n items would cost n^2."""
    for tenant_id, appended in audit.by_tenant(events):
        if len(appended) == 1:
            await conn.execute("SELECT zk_audit_append(%s, %s)", (tenant_id, appended[0].canonical()))
            continue
        # The head's row made first if the chain is new, so that FOR UPDATE has a row to lock.
        await conn.execute(_NEW_AUDIT_HEAD, (tenant_id, audit.GENESIS))
        row = await _fetchone(conn, SQL.audit_head + " FOR UPDATE", (tenant_id,))
        assert row is not None  # made above
        records = list(audit.appended(rows.audit_head_from_row(row, tenant_id), tenant_id, appended))
        async with conn.cursor() as cursor:
            await cursor.executemany(SQL.add_audit_record, [rows.audit_record_params(r) for r in records])
        await conn.execute(SQL.set_audit_head, (tenant_id, records[-1].sequence, records[-1].hash))


async def _fetchone(conn: Conn, query: str, params: Sequence[object] = ()) -> tuple[Any, ...] | None:
    return await (await conn.execute(query, params)).fetchone()


async def _lock_principal(conn: Conn, principal_id: str) -> None:
    await conn.execute("SELECT 1 FROM principals WHERE principal_id = %s FOR UPDATE", (principal_id,))


async def _require(conn: Conn, query: str, params: Sequence[object], missing: str) -> None:
    if await _fetchone(conn, query, params) is None:
        raise UnknownReference(missing)


async def _insert(conn: Conn, statement: str, params: Sequence[object], what: str) -> None:
    # No savepoint: a refused row fails the whole use case, which rolls back.
    try:
        await conn.execute(statement, params)
    except errors.UniqueViolation:
        raise AlreadyExists(f"{what} already exists") from None
    except errors.ForeignKeyViolation:
        raise UnknownReference(f"{what} refers to something that does not exist") from None
