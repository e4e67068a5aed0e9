"""The PostgreSQL store: several workers and hosts on one database.

Each use case is one transaction on a pooled connection (READ COMMITTED); a
single-statement read runs on its own in autocommit. The delete is a
conditional UPDATE on (item, version), run by the database function
zk_delete_item in one round trip: a concurrent delete of the same row
waits for the first to commit, re-checks `NOT deleted` and changes nothing, so
exactly one change takes a sequence number. Counting limits (the active-token
cap, the mint rate) first locks the principal's row, so concurrent mints from
any process are counted one after the other.

A database that cannot be reached (down, restarting, refusing connections, or
no connection made within ACQUIRE_TIMEOUT) fails a use case with the domain's
StoreUnavailable, never with the driver's error; the pool checks a connection
before handing it out and replaces a broken one, so the first call after an
outage works. A pool whose every connection stayed held by other calls for
ACQUIRE_TIMEOUT is overload, not an outage: StoreBusy. Readiness pings the
database on a connection of its own, outside the pool, so that a burst that
holds every pooled connection does not make a healthy database look down.

A call that waits SUSPECT_AFTER for a pooled connection while other calls hold
fewer than all of them (the pool cannot make one) has the database pinged; a
ping that finds it unreachable, this one or readiness's, fails every call then
waiting for a connection at once, with StoreUnavailable, rather than at its
acquire timeout. Calls after that are refused before they get here, while
readiness knows the store down (rpc/store_down.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import re
import select
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from contextlib import asynccontextmanager
from typing import Any, TypeVar
from urllib.parse import unquote, urlsplit

import psycopg
from psycopg import AsyncConnection, errors, sql
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from zkplatform.domain import audit
from zkplatform.domain.audit import Action, Actor, AuditRecord, Event, Head
from zkplatform.domain.errors import StoreBusy, StoreUnavailable
from zkplatform.domain.key_log import AddDevice, Cosignature, Device, Leaf, LogChange
from zkplatform.domain.models import (
    ChangePage,
    Item,
    ItemChange,
    ItemPage,
    ItemPatch,
    Principal,
    ScopeChange,
    Tenant,
    TokenRecord,
    Vault,
    new_epoch,
)
from zkplatform.domain.ports.items import (
    Conflict,
    Created,
    CreateOutcome,
    DeleteOutcome,
    Existing,
    Missing,
    RecordOutcome,
    Stale,
    UpdateOutcome,
)
from zkplatform.domain.ports.refusals import AlreadyExists, ParentRevoked, PrincipalDisabled, UnknownReference
from zkplatform.domain.ports.tokens import MintOutcome, RevokeOutcome
from zkplatform.domain.request_ids import A, Answer, Repeated, RequestId, Reused, oldest_kept
from zkplatform.observability import probes
from zkplatform.store import StoreOpenError, display_url, key_rows, rows
from zkplatform.store.background import Background
from zkplatform.store.key_rows import POSTGRESQL as KEYS
from zkplatform.store.migrations import check_version, migrations
from zkplatform.store.notify import CHANNEL, ChangeFeed, Listener
from zkplatform.store.statements import POSTGRESQL as SQL
from zkplatform.store.statements import token_listing
from zkplatform_tlog.merkle import leaf_hash

log = logging.getLogger(__name__)

T = TypeVar("T")
DIALECT = "postgresql"
OPEN_TIMEOUT = 10.0  # seconds to wait for a server that may yet accept connections
# Seconds a use case waits for a pooled connection before it fails: with StoreBusy when other
# calls held every connection the pool may open all along (its caller gets `resource_exhausted`),
# else with StoreUnavailable (none could be made: `unavailable`). Either way it tries again later.
ACQUIRE_TIMEOUT = 5.0
# Seconds the pool goes on trying to replace a lost connection in the background. Its delays
# double from 1 s, so after a long outage its next attempt could be minutes away; given up
# instead, a new one starts, at once, with the next call that needs a connection.
RECONNECT_TIMEOUT = 5.0
# Seconds a ping (readiness: domain/readiness.py) may take, connecting included: a server that
# does not answer within it is taken for unreachable.
PING_TIMEOUT = 2.0
# Seconds a call waits for a pooled connection, while other calls hold fewer than all of them,
# before the database is pinged: a pool that is making a connection makes it in milliseconds.
SUSPECT_AFTER = 0.25
# Seconds between two log lines about a busy pool: a burst refuses many calls, which one line tells.
BUSY_LOG_INTERVAL = 10.0
# SQLSTATEs of a server that cannot serve now: a lost connection (class 08), too many clients
# or no resources (class 53), shutting down or starting up (57P01-57P03). An error without a
# SQLSTATE is libpq's own: refused, timed out, the connection closed under it.
_UNREACHABLE_CLASSES = ("08", "53")
_UNREACHABLE_STATES = frozenset({"57P01", "57P02", "57P03"})
RETRY_DELAYS = (0.1, 0.2, 0.5, 1.0)  # then every last one, until OPEN_TIMEOUT
# libpq reports a refused connection with the server's message and no SQLSTATE (psycopg's
# sqlstate is None), so the states that heal by themselves are known by their messages;
# anything else (28P01 and 28000 credentials, 3D000 no such database, a refused or unknown
# host) fails at once: waiting would only delay the one line that says what to fix.
_HEALING = (
    "the database system is starting up",  # 57P03, and the three below
    "the database system is shutting down",
    "the database system is in recovery mode",
    "the database system is not yet accepting connections",
    "sorry, too many clients already",  # 53300
    "remaining connection slots are reserved",  # 53300
    "connection timeout expired",
)
_ADVICE = (  # the first pattern found in the reason, lower-cased
    (r"password authentication failed|authentication failed", "check the user and password in the store URL"),
    (r"no password supplied", "put the password in the store URL"),
    (r"no pg_hba\.conf entry", "allow this host, user and database in the server's pg_hba.conf"),
    (r'^role ".*" does not exist', "check the user in the store URL"),
    (r'^database ".*" does not exist', "create the database, or correct its name in the store URL"),
    (r"connection refused", "check that the server is running, and the host and port in the store URL"),
    (r"failed to resolve host", "check the host in the store URL"),
)
_MIGRATION_LOCK = 0x7A6B_706C  # pg_advisory_xact_lock key: one migrator at a time
# How long a worker answers with the epoch it last read (the cursor of a create, an update, a
# delete; a watch's check at its heartbeat): a round trip saved on every change, for an epoch
# that changes only with a restore. Pages, and the checks of cursors against them, read it in
# their own snapshot instead.
_EPOCH_TTL_SECONDS = 1.0
# "revoked <token id>" for each token of a principal live at a time: (channel, principal, now).
# Each token's watches check their access again, as after a revocation (store/notify.py).
_ANNOUNCE_ACCESS = (
    "SELECT pg_notify(%s, 'revoked ' || token_id) FROM tokens"
    " WHERE principal_id = %s AND revoked = FALSE AND expires_at > %s"
)
Conn = AsyncConnection[tuple[Any, ...]]


class PostgresStore:
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

    @classmethod
    async def open(
        cls, url: str, *, check_schema: bool = True, max_size: int = 10, acquire_timeout: float = ACQUIRE_TIMEOUT
    ) -> PostgresStore:
        """Open a pool on the database at url; StoreOpenError at once when the
        server refuses it for good (credentials, no such database, nothing
        listening), after OPEN_TIMEOUT when it stays unready (starting up, full).
        SchemaError (unless told not to check) when it is not at this build's schema."""
        deadline = time.monotonic() + OPEN_TIMEOUT
        await _first_connection(url, deadline)
        pool: AsyncConnectionPool[Conn] = AsyncConnectionPool(
            url,
            min_size=1,
            max_size=max_size,
            open=False,
            kwargs={"autocommit": True},
            check=_check_connection,
            timeout=acquire_timeout,
            reconnect_timeout=RECONNECT_TIMEOUT,
        )
        store = cls(pool, url)
        try:
            try:
                await pool.open(wait=True, timeout=max(deadline - time.monotonic(), 1.0))
            except PoolTimeout:  # the server went away since the first connection
                msg = f"cannot open the store {store._url}: the server stopped accepting connections; try again"
                raise StoreOpenError(msg) from None
            if check_schema:
                check_version(await store.schema_version(), DIALECT, store._url)
        except BaseException:
            await store.close()
            raise
        probes.watch_pool(pool.get_stats)
        return store

    async def close(self) -> None:
        await self.listener.stop()
        await self._background.drain()
        if self._suspicion is not None:
            self._suspicion.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._suspicion
        await self._pinger.close()
        await self._pool.close()

    def change_feed(self) -> ChangeFeed:
        return self._feed

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

    # schema

    async def schema_version(self) -> int | None:
        async with self._connection() as conn:
            exists = await _fetchone(conn, "SELECT to_regclass('schema_version') IS NOT NULL")
            if exists is None or not exists[0]:
                return None
            row = await _fetchone(conn, SQL.schema_version)
        return None if row is None else int(row[0])

    async def migrate(self) -> list[int]:
        """Apply the missing migrations in one transaction, one migrator at a time; the versions applied."""

        async def apply(conn: Conn) -> list[int]:
            await conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
            await conn.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
            row = await _fetchone(conn, SQL.schema_version)
            current = 0 if row is None else int(row[0])
            applied = []
            for migration in migrations(DIALECT):
                if migration.version > current:
                    await conn.execute(sql.SQL(migration.sql))  # a file of ours, several statements
                    applied.append(migration.version)
            if applied:
                await conn.execute(SQL.clear_schema_version)
                await conn.execute(SQL.set_schema_version, (applied[-1],))
            check_version(applied[-1] if applied else current, DIALECT, self._url)
            return applied

        return await self._tx(apply)

    # directory

    async def add_tenant(self, tenant: Tenant, actor: Actor) -> None:
        async def add(conn: Conn) -> None:
            await _insert(conn, SQL.add_tenant, (tenant.tenant_id,), f"tenant {tenant.tenant_id}")
            await _record(conn, [actor.event(tenant.tenant_id, Action.TENANT_ADDED, tenant=tenant.tenant_id)])

        await self._tx(add)

    async def add_principal(self, principal: Principal, actor: Actor) -> None:
        async def add(conn: Conn) -> None:
            await _require(
                conn,
                SQL.tenant_exists,
                (principal.tenant_id,),
                f"no tenant {principal.tenant_id}",
            )
            await _insert(
                conn,
                SQL.add_principal,
                (
                    principal.principal_id,
                    principal.tenant_id,
                    principal.role.value,
                    rows.scopes_to_text(principal.allowed_scopes),
                ),
                f"principal {principal.principal_id}",
            )
            event = actor.event(principal.tenant_id, Action.PRINCIPAL_ADDED, principal=principal.principal_id)
            await _record(conn, [event])

        await self._tx(add)

    async def add_vault(self, vault: Vault, actor: Actor) -> None:
        async def add(conn: Conn) -> None:
            await _require(conn, SQL.tenant_exists, (vault.tenant_id,), f"no tenant {vault.tenant_id}")
            for member in sorted(vault.members):
                await _require(
                    conn,
                    SQL.principal_in_tenant,
                    (member, vault.tenant_id),
                    f"no principal {member} in tenant {vault.tenant_id}",
                )
            await _insert(
                conn,
                SQL.add_vault,
                (vault.vault_id, vault.tenant_id),
                f"vault {vault.vault_id}",
            )
            async with conn.cursor() as cursor:
                await cursor.executemany(SQL.add_vault_member, [(vault.vault_id, m) for m in sorted(vault.members)])
            await _record(conn, audit.vault_events(actor, vault))

        await self._tx(add)

    async def get_principal(self, principal_id: str) -> Principal | None:
        row = await self._one(
            SQL.get_principal,
            (principal_id,),
        )
        return None if row is None else rows.principal_from_row(row)

    async def get_vault(self, vault_id: str) -> Vault | None:
        row = await self._one(
            "SELECT v.tenant_id, coalesce(array_agg(m.principal_id) FILTER (WHERE m.principal_id IS NOT NULL), '{}')"
            " FROM vaults v LEFT JOIN vault_members m USING (vault_id) WHERE v.vault_id = %s GROUP BY v.tenant_id",
            (vault_id,),
        )
        return None if row is None else Vault(vault_id, row[0], frozenset(row[1]))

    async def list_tenants(self) -> list[Tenant]:
        return [Tenant(row[0]) for row in await self._all(SQL.list_tenants)]

    async def list_principals(self, tenant_id: str) -> list[Principal]:
        return [rows.principal_from_row(row) for row in await self._all(SQL.list_principals, (tenant_id,))]

    async def list_vaults(self, tenant_id: str) -> list[Vault]:
        found = await self._all(  # one statement: the vaults and their members from one snapshot
            "SELECT v.vault_id, coalesce(array_agg(m.principal_id) FILTER (WHERE m.principal_id IS NOT NULL), '{}')"
            " FROM vaults v LEFT JOIN vault_members m USING (vault_id) WHERE v.tenant_id = %s"
            " GROUP BY v.vault_id ORDER BY v.vault_id",
            (tenant_id,),
        )
        return [Vault(vault_id, tenant_id, frozenset(members)) for vault_id, members in found]

    async def list_member_vaults(self, principal_id: str, after: str, limit: int) -> list[Vault]:
        # One statement: the vaults and their members from one snapshot.
        return rows.member_vaults(await self._all(SQL.member_vaults, (principal_id, after, limit)))

    async def add_vault_member(self, vault_id: str, principal_id: str, actor: Actor) -> bool:
        async def add(conn: Conn) -> bool:
            tenant_id = await _vault_tenant(conn, vault_id)
            missing = f"no principal {principal_id} in tenant {tenant_id}"
            await _require(conn, SQL.principal_in_tenant, (principal_id, tenant_id), missing)
            inserted = await conn.execute(SQL.add_vault_member + " ON CONFLICT DO NOTHING", (vault_id, principal_id))
            if inserted.rowcount == 0:
                return False
            event = actor.event(tenant_id, Action.VAULT_MEMBER_ADDED, vault=vault_id, principal=principal_id)
            await _record(conn, [event])
            return True

        return await self._tx(add)

    async def remove_vault_member(self, vault_id: str, principal_id: str, actor: Actor) -> bool:
        async def remove(conn: Conn) -> bool:
            tenant_id = await _vault_tenant(conn, vault_id)
            if (await conn.execute(SQL.remove_vault_member, (vault_id, principal_id))).rowcount == 0:
                return False
            event = actor.event(tenant_id, Action.VAULT_MEMBER_REMOVED, vault=vault_id, principal=principal_id)
            await _record(conn, [event])
            return True

        return await self._tx(remove)

    async def set_principal_disabled(self, principal_id: str, actor: Actor, *, disabled: bool) -> list[str] | None:
        async def update(conn: Conn) -> list[str] | None:
            # The UPDATE locks the principal's row: a mint or an issue for it waits, then sees the flag.
            if (await conn.execute(SQL.set_principal_disabled, (disabled, principal_id))).rowcount == 0:
                return None
            revoked = []
            if disabled:
                cursor = await conn.execute(SQL.revoke_principal_tokens, (principal_id,))
                revoked = sorted(row[0] for row in await cursor.fetchall())
            (tenant_id,) = await _fetchone(conn, SQL.principal_tenant, (principal_id,)) or ("",)
            await _record(conn, audit.disable_events(actor, tenant_id, principal_id, revoked, disabled=disabled))
            return revoked

        return await self._tx(update)

    async def change_principal_scopes(
        self, tenant_id: str, principal_id: str, change: ScopeChange, actor: Actor
    ) -> tuple[Principal, Principal]:
        async def update(conn: Conn) -> tuple[Principal, Principal]:
            # The row locked: changes of one grant at once apply in turn, each to what the other left.
            row = await _fetchone(conn, SQL.principal_of_tenant + " FOR UPDATE", (principal_id, tenant_id))
            if row is None:
                await _require(conn, SQL.tenant_exists, (tenant_id,), f"no tenant {tenant_id}")
                raise UnknownReference(f"no principal {principal_id} in tenant {tenant_id}")
            before = rows.principal_from_row(row)
            after = change.applied(before)
            if after.allowed_scopes == before.allowed_scopes:
                return before, after
            await conn.execute(SQL.set_principal_scopes, (rows.scopes_to_text(after.allowed_scopes), principal_id))
            await _record(conn, [audit.scopes_event(actor, before, after)])
            if before.scopes - after.scopes:
                # A narrowing: every worker's open watches of the principal's tokens check their
                # scope again, at the commit, woken by the payload a revocation's trigger sends
                # (migration 0006); no token changes, so nothing else would send it.
                await conn.execute(_ANNOUNCE_ACCESS, (CHANNEL, principal_id, actor.at))
            return before, after

        return await self._tx(update)

    # items

    async def add_items(self, items: Iterable[Item], actor: Actor) -> None:
        async def add(conn: Conn) -> None:
            known: set[tuple[str, str]] = set()  # (vault, tenant) pairs checked: one query per vault, not per item
            for chunk in rows.chunks(items):
                await _add_chunk(conn, chunk, known)
                await _record(conn, [audit.item_event(actor, Action.ITEM_CREATED, item) for item in chunk])

        await self._tx(add)

    async def get_item(self, vault_id: str, item_id: str) -> Item | None:
        row = await self._one(SQL.get_item, (vault_id, item_id))
        return None if row is None else rows.item_from_row(row)[0]

    async def delete_item(
        self, vault_id: str, item_id: str, base_version: int, actor: Actor, *, request: RequestId | None = None
    ) -> DeleteOutcome:
        # The compare-and-set, its audit event and the erasure of the item's recorded answers
        # run in the database (migrations 0005, 0007), one statement in its own transaction: one
        # round trip instead of eight. The function appends the event to the chain of the
        # vault's tenant. With a request id, the same statement between the claim of the id
        # and its settlement, in one transaction.
        params = (
            vault_id,
            item_id,
            base_version,
            actor.at,
            actor.event_bytes(Action.ITEM_DELETED, vault=vault_id, item=item_id),
            oldest_kept(actor.at),
        )
        if request is None:
            return _deleted(await self._one(_DELETE_ITEM, params))

        async def delete(conn: Conn) -> DeleteOutcome:
            if (earlier := await _claim(conn, actor, request, ItemChange)) is not None:
                return earlier
            outcome = _deleted(await _fetchone(conn, _DELETE_ITEM, params))
            await _settle(conn, actor, request, outcome if isinstance(outcome, ItemChange) else None)
            return outcome

        return await self._tx(delete)

    async def create_item(self, item: Item, actor: Actor, *, request: RequestId | None = None) -> CreateOutcome:
        # The insert that takes the sequence number in one statement, in its own transaction:
        # a duplicate id fails the statement, which rolls back the number it took. Concurrent
        # creates in one vault queue on the vault's row; of one id, the first commits and the
        # others then fail on the primary key.
        params = (
            item.vault_id,
            item.tenant_id,
            *rows.item_params(item, 0)[:-1],
            audit.item_event(actor, Action.ITEM_CREATED, item).canonical(),
        )
        if request is None:
            for _ in range(_ATTEMPTS):
                try:
                    row = await self._one(_CREATE_ITEM, params)
                except errors.UniqueViolation:
                    existing = await self._one(SQL.get_item, (item.vault_id, item.item_id))
                    if existing is not None:
                        return Existing(ItemChange(*rows.item_from_row(existing)))
                    continue  # its tombstone was purged in between: the id is free again
                return _created(item, row)
            raise _contended(item.vault_id, item.item_id)

        async def create(conn: Conn) -> CreateOutcome:
            # The same, between the claim of the id and its settlement: the insert in a
            # savepoint, so that a duplicate fails it alone.
            if (earlier := await _claim(conn, actor, request, ItemChange)) is not None:
                return earlier
            for _ in range(_ATTEMPTS):
                try:
                    async with conn.transaction():
                        row = await _fetchone(conn, _CREATE_ITEM, params)
                except errors.UniqueViolation:
                    existing = await _fetchone(conn, SQL.get_item, (item.vault_id, item.item_id))
                    if existing is None:
                        continue
                    await _settle(conn, actor, request, None)
                    return Existing(ItemChange(*rows.item_from_row(existing)))
                outcome = _created(item, row)
                await _settle(conn, actor, request, outcome.change)
                return outcome
            raise _contended(item.vault_id, item.item_id)

        return await self._tx(create)

    async def update_item(  # noqa: PLR0913 # the update's parts, and the request id naming it
        self,
        vault_id: str,
        item_id: str,
        base_version: int,
        patch: ItemPatch,
        actor: Actor,
        *,
        request: RequestId | None = None,
    ) -> UpdateOutcome:
        event = actor.event_bytes(Action.ITEM_UPDATED, vault=vault_id, item=item_id)  # the vault's tenant's
        params = (vault_id, item_id, base_version, *_patch_params(patch), actor.at, vault_id, item_id, event)

        async def update(fetch: Callable[[str, Sequence[object]], Awaitable[tuple[Any, ...] | None]]) -> UpdateOutcome:
            for _ in range(_ATTEMPTS):
                row = await fetch(_UPDATE_ITEM, params)
                if row is not None:
                    return ItemChange(*rows.item_from_row(row[:-1]))
                # Not applied: the item as committed now says why. Versions only grow, so it is
                # at base_version again only if it was purged and created anew in between: then retry.
                current = await fetch(SQL.get_item, (vault_id, item_id))
                if current is None:
                    return Missing()
                change = ItemChange(*rows.item_from_row(current))
                if change.item.deleted or change.item.version != base_version:
                    return Conflict(change)
            raise _contended(vault_id, item_id)

        if request is None:  # each statement in its own transaction
            return await update(self._one)

        async def update_once(conn: Conn) -> UpdateOutcome:
            if (earlier := await _claim(conn, actor, request, ItemChange)) is not None:
                return earlier
            outcome = await update(lambda query, query_params: _fetchone(conn, query, query_params))
            await _settle(conn, actor, request, outcome if isinstance(outcome, ItemChange) else None)
            return outcome

        return await self._tx(update_once)

    async def record_answer(self, actor: Actor, request: RequestId, answer: ItemChange) -> RecordOutcome:
        async def record(conn: Conn) -> RecordOutcome:
            if (earlier := await _claim(conn, actor, request, ItemChange)) is not None:
                return earlier
            # The item's row is locked from here to the commit: a delete of it waits, and then
            # erases this record; one that committed first leaves it deleted, and then nothing is
            # recorded.
            live = await _fetchone(
                conn,
                "SELECT 1 FROM items WHERE vault_id = %s AND item_id = %s AND NOT deleted FOR SHARE",
                (answer.item.vault_id, answer.item.item_id),
            )
            await _settle(conn, actor, request, None if live is None else answer)
            return None

        return await self._tx(record)

    async def list_items(self, vault_id: str, after_item_id: str, limit: int, *, show_deleted: bool) -> ItemPage:
        # One statement, so one snapshot: the sequence is the one the items are at.
        async with self._connection() as conn:
            cursor = await conn.execute(
                _LIST_ITEMS if show_deleted else _LIST_LIVE_ITEMS, (vault_id, vault_id, after_item_id, limit)
            )
            found = await cursor.fetchall()
        # The sequence and the epoch come with every row, and alone (items all NULL) when the page is empty.
        sequence, epoch = int(found[0][0]), self._saw_epoch(str(found[0][1]))
        return ItemPage(tuple(rows.item_from_row(r[2:])[0] for r in found if r[2] is not None), sequence, epoch)

    async def vault_sequence(self, vault_id: str) -> int:
        row = await self._one(SQL.vault_sequence, (vault_id,))
        return 0 if row is None else int(row[0])

    async def epoch(self) -> str:
        """The store's epoch, as read within the last _EPOCH_TTL_SECONDS by this worker."""
        if self._epoch is not None and time.monotonic() - self._epoch[1] < _EPOCH_TTL_SECONDS:
            return self._epoch[0]
        row = await self._one(SQL.epoch)
        assert row is not None  # one row, made by the migration
        return self._saw_epoch(str(row[0]))

    def _saw_epoch(self, epoch: str) -> str:
        self._epoch = (epoch, time.monotonic())
        return epoch

    async def rotate_epoch(self, actor: Actor) -> str:
        epoch = new_epoch()

        async def rotate(conn: Conn) -> None:
            await conn.execute(SQL.set_epoch, (epoch,))
            tenants = [row[0] for row in await (await conn.execute(SQL.list_tenants)).fetchall()]
            await _record(conn, audit.epoch_events(actor, tenants, epoch))

        await self._tx(rotate)
        return self._saw_epoch(epoch)

    async def purge_tombstones(self, deleted_before: int, actor: Actor) -> int:
        async def purge(conn: Conn) -> int:
            # One statement for the rows purged and the horizons they raise; then their events.
            purged = await (await conn.execute(_PURGE, (deleted_before,))).fetchall()
            await _record(conn, [actor.event(t, Action.ITEM_PURGED, vault=v, item=i) for t, v, i in purged])
            await conn.execute(SQL.forget_request_ids, (oldest_kept(actor.at),))
            return len(purged)

        return await self._tx(purge)

    async def list_changes(self, vault_id: str, since: int, limit: int) -> ChangePage:
        # One statement, so one snapshot: the vault's state is the one its changes are at.
        async with self._connection() as conn:
            found = await (await conn.execute(_LIST_CHANGES, (vault_id, since, limit))).fetchall()
        # The vault's state and the epoch come with every row, and alone (items all NULL) when
        # there is no change; 0 for a vault the store does not have.
        sequence, horizon, epoch = int(found[0][0]), int(found[0][1]), self._saw_epoch(str(found[0][2]))
        changes = tuple(ItemChange(*rows.item_from_row(r[3:])) for r in found if r[3] is not None)
        return ChangePage(changes, sequence, horizon, epoch)

    # tokens

    async def add_token(self, token: TokenRecord, actor: Actor) -> None:
        async def add(conn: Conn) -> None:
            await _add_token(conn, token)
            await _record(conn, [actor.event(token.tenant_id, Action.TOKEN_ISSUED, token=token.token_id)])

        await self._tx(add)

    async def add_minted_token(
        self, token: TokenRecord, cap: int, actor: Actor, *, request: RequestId | None = None
    ) -> MintOutcome:
        async def add(conn: Conn) -> MintOutcome:
            if request is not None and (earlier := await _claim(conn, actor, request, tuple)) is not None:
                return earlier
            # The principal's row lock orders this after any revocation of its tokens or its
            # disabling (they take the same lock), and the statements below, each with a fresh
            # snapshot, see what those committed.
            await _usable_principal(conn, token.principal_id)
            parent = await _fetchone(conn, SQL.parent_revoked, (token.parent_token_id,))
            if parent is not None and parent[0]:
                raise ParentRevoked(f"token {token.parent_token_id} was revoked")
            count, first_expiry = await _fetchone(
                conn,
                "SELECT count(*), min(expires_at) FROM tokens"
                " WHERE principal_id = %s AND minted AND NOT revoked AND expires_at > %s",
                (token.principal_id, actor.at),
            ) or (0, None)
            if count >= cap:
                if request is not None:
                    await _settle(conn, actor, request, None)
                return int(first_expiry)
            await _add_token(conn, token)
            await _record(conn, [actor.event(token.tenant_id, Action.TOKEN_MINTED, token=token.token_id)])
            if request is not None:
                await _settle(conn, actor, request, (token.token_id,))
            return None

        return await self._tx(add)

    async def find_token(self, secret_hash: bytes) -> TokenRecord | None:
        row = await self._one(SQL.find_token, (secret_hash,))
        return None if row is None else rows.token_from_row(row)

    async def find_token_with_principal(self, secret_hash: bytes) -> tuple[TokenRecord, Principal] | None:
        row = await self._one(SQL.find_token_with_principal, (secret_hash,))
        return None if row is None else rows.token_with_principal_from_row(row)

    async def get_token(self, token_id: str) -> TokenRecord | None:
        row = await self._one(SQL.get_token, (token_id,))
        return None if row is None else rows.token_from_row(row)

    async def get_token_with_principal(self, token_id: str) -> tuple[TokenRecord, Principal] | None:
        row = await self._one(SQL.get_token_with_principal, (token_id,))
        return None if row is None else rows.token_with_principal_from_row(row)

    async def revoke_token_tree(
        self, token_id: str, actor: Actor, action: Action = Action.TOKEN_REVOKED, *, audited: bool = True
    ) -> list[str] | None:
        return await self._tx(lambda conn: _revoke_tree(conn, token_id, actor, action, audited=audited))

    async def revoke_token_tree_once(self, token_id: str, actor: Actor, request: RequestId | None) -> RevokeOutcome:
        async def revoke(conn: Conn) -> RevokeOutcome:
            if request is not None and (earlier := await _claim(conn, actor, request, tuple)) is not None:
                return earlier
            revoked = await _revoke_tree(conn, token_id, actor, Action.TOKEN_REVOKED, audited=True)
            if request is not None:
                await _settle(conn, actor, request, None if revoked is None else tuple(revoked))
            return revoked

        return await self._tx(revoke)

    async def list_tokens(
        self,
        tenant_id: str,
        principal_id: str | None,
        *,
        live_at: int | None,
        after: tuple[int, str] | None,
        limit: int,
    ) -> list[tuple[TokenRecord, Principal]]:
        query = token_listing(
            one_principal=principal_id is not None, live_only=live_at is not None, after=after is not None
        ).replace("?", "%s")
        found = await self._all(query, rows.listing_params(tenant_id, principal_id, live_at, after, limit))
        return [rows.token_with_principal_from_row(row) for row in found]

    async def touch_token(self, token_id: str, now: int, stale_before: int) -> None:
        # Not waited for: the call that authenticated goes on at once; the UPDATE's condition
        # makes the workers that race for one token write it once.
        async def touch() -> None:
            async with self._connection() as conn:
                await conn.execute(SQL.touch_token, (now, token_id, stale_before))

        self._background.start(touch())

    # audit trail

    async def audit_tenants(self) -> list[str]:
        return [row[0] for row in await self._all(SQL.audit_tenants)]

    async def audit_head(self, tenant_id: str) -> Head | None:
        row = await self._one(SQL.audit_head, (tenant_id,))
        return rows.audit_head_from_row(row, tenant_id)

    async def audit_records(self, tenant_id: str, after: int, limit: int) -> list[AuditRecord]:
        return [
            rows.audit_record_from_row(row) for row in await self._all(SQL.audit_records, (tenant_id, after, limit))
        ]

    async def _all(self, query: str, params: Sequence[object] = ()) -> list[tuple[Any, ...]]:
        async with self._connection() as conn:
            return await (await conn.execute(query, params)).fetchall()

    # key log

    async def key_log_size(self, tenant_id: str) -> int:
        row = await self._one(KEYS.size, (tenant_id,))
        return 0 if row is None else int(row[0])

    async def devices(self, tenant_id: str, principal_id: str | None = None) -> list[Device]:
        if principal_id is None:
            found = await self._all(KEYS.tenant_devices, (tenant_id,))
        else:
            found = await self._all(KEYS.principal_devices, (tenant_id, principal_id))
        return [key_rows.device_from_row(row) for row in found]

    async def find_device_key(self, tenant_id: str, key_id: str) -> Device | None:
        row = await self._one(KEYS.find_device, (tenant_id, key_id, tenant_id, key_id))
        return None if row is None else key_rows.device_from_row(row)

    async def append_key_log(  # noqa: PLR0913 # the entry, its change and event, and the request id naming it
        self,
        tenant_id: str,
        expected_size: int,
        entry: bytes,
        *,
        change: LogChange,
        event: tuple[Action, dict[str, str]],
        actor: Actor,
        request: RequestId | None = None,
    ) -> int | Repeated[tuple[str, ...]] | Reused | None:
        async def append(conn: Conn) -> int | Repeated[tuple[str, ...]] | Reused | None:
            # The request id's claim is the transaction's first lock, as on every write (then the
            # key log's head, then the audit trail's): a concurrent call with the id waits.
            if request is not None and (earlier := await _claim(conn, actor, request, tuple)) is not None:
                return earlier
            if expected_size == 0:
                await conn.execute(KEYS.new_head, (tenant_id,))
            # The compare-and-set, which locks the head's row until the commit: appends of the
            # tenant queue there, whichever worker or host makes them, and each statement below
            # sees what the appends before this one committed.
            if await _fetchone(conn, KEYS.move_head, (tenant_id, expected_size)) is None:
                if request is not None:
                    await _settle(conn, actor, request, None)
                return None
            await conn.execute(KEYS.add_entry, (tenant_id, expected_size, entry, leaf_hash(entry)))
            if isinstance(change, AddDevice):
                await _add_device(conn, tenant_id, expected_size, change)
            else:
                revoked = (change.at, expected_size, tenant_id, change.principal_id)
                async with conn.cursor() as cursor:
                    await cursor.executemany(KEYS.revoke_device, [(*revoked, d) for d in change.device_ids])
            action, details = event
            await _record(conn, [actor.event(tenant_id, action, **details)])
            if request is not None:
                await _settle(conn, actor, request, (str(expected_size),))
            return expected_size + 1

        return await self._tx(append)

    async def key_log_leaves(self, tenant_id: str, start: int, limit: int, size: int) -> list[Leaf]:
        found = await self._all(KEYS.leaves, (tenant_id, start, size, limit))
        return [key_rows.leaf_from_row(tenant_id, row) for row in found]

    async def key_log_hashes(self, tenant_id: str, size: int) -> list[bytes]:
        return [bytes(row[0]) for row in await self._all(KEYS.hashes, (tenant_id, size))]

    async def live_devices(
        self, tenant_id: str, principal_ids: Iterable[str], size: int, after: tuple[str, int] | None, limit: int
    ) -> list[Device]:
        wanted, params = key_rows.live_devices_params(tenant_id, principal_ids, size, after, limit)
        found = await self._all(KEYS.live_devices_of(len(wanted), "%s"), params)
        return [key_rows.device_from_row(row) for row in found]

    async def key_log_tenants(self) -> list[str]:
        return [str(row[0]) for row in await self._all(KEYS.tenants)]

    async def save_cosignature(self, cosignature: Cosignature) -> None:
        async def save(conn: Conn) -> None:
            await conn.execute(KEYS.save_cosignature, key_rows.cosignature_params(cosignature))

        await self._tx(save)

    async def served_checkpoint(
        self, tenant_id: str, witnesses: Iterable[str], quorum: int
    ) -> tuple[int, list[Cosignature]]:
        named = sorted(set(witnesses))
        params: tuple[object, ...]
        if quorum <= 0:
            query, params = KEYS.current_cosignatures_of(len(named), "%s"), (tenant_id, tenant_id, *named)
        else:
            query, params = (
                KEYS.quorum_cosignatures_of(len(named), "%s"),
                (tenant_id, *named, tenant_id, *named, quorum),
            )
        return key_rows.served(tenant_id, await self._all(query, params))

    async def witness_sizes(self, tenant_id: str) -> dict[str, int]:
        return {str(witness): int(size) for witness, size in await self._all(KEYS.witness_sizes, (tenant_id,))}

    # limits

    async def record_mint_attempt(self, principal_id: str, now: int, window_seconds: int, limit: int) -> int | None:
        async def record(conn: Conn) -> int | None:
            await _lock_principal(conn, principal_id)
            await conn.execute(SQL.forget_mint_attempts, (principal_id, now - window_seconds))
            await conn.execute(SQL.add_mint_attempt, (principal_id, now))
            cursor = await conn.execute(SQL.mint_attempts, (principal_id,))
            attempts = [int(r[0]) for r in await cursor.fetchall()]
            if len(attempts) <= limit:
                return None
            return max(1, attempts[len(attempts) - limit] + window_seconds - now)

        return await self._tx(record)

    async def remember_proof(self, key_thumbprint: str, jti: str, now: int, expires_at: int) -> bool:
        async def remember(conn: Conn) -> bool:
            await conn.execute(SQL.forget_lapsed_proofs, (now,))
            inserted = await conn.execute(SQL.remember_proof, (key_thumbprint, jti, expires_at))
            return inserted.rowcount > 0

        return await self._tx(remember)


# Attempts of a create or an update that meets a purge of its item in between (each a
# race with a purge, which forgets a tombstone once in 90 days): then it says so.
_ATTEMPTS = 3
_ITEM_INSERT_COLUMNS = rows.ITEM_COLUMNS.removesuffix(", sequence")
# (vault, tenant, the item's columns but its sequence) -> the sequence taken; no row when the
# vault is not in that tenant. The vault's row is locked first, then the item inserted.
_CREATE_ITEM = (
    "WITH taken AS (" + SQL.take_tenant_sequence + "),"
    f" added AS (INSERT INTO items ({_ITEM_INSERT_COLUMNS}, sequence)"
    f" SELECT {', '.join(['%s'] * len(_ITEM_INSERT_COLUMNS.split(', ')))}, taken.sequence FROM taken"
    " RETURNING sequence, tenant_id)"
    " SELECT sequence, zk_audit_append(tenant_id, %s) FROM added"  # the event, only for an item added
)
# The compare-and-set of an update, in one statement: (vault, item, base_version, kind, title
# hash, payload, keys, now, vault, item) -> the item changed; no row when it did not apply.
# Each of kind to keys is NULL when the patch leaves it alone: the column then keeps its value.
# The item's row is locked first, and only if it is live at base_version (a concurrent update
# that committed first makes this re-check fail: READ COMMITTED re-reads a locked row's latest
# version), then the vault's, to take the next number; so exactly one of concurrent updates at
# one base_version changes the item and takes a number, and the order of locks is the delete's.
_UPDATE_ITEM = (
    "WITH target AS (SELECT vault_id FROM items"
    " WHERE vault_id = %s AND item_id = %s AND version = %s AND NOT deleted FOR UPDATE),"
    " taken AS (UPDATE vaults SET sequence = vaults.sequence + 1 FROM target"
    " WHERE vaults.vault_id = target.vault_id RETURNING vaults.sequence),"
    " changed AS (UPDATE items SET kind = coalesce(%s, kind), title_hash = coalesce(%s, title_hash),"
    " payload = coalesce(%s, payload), wrapped_keys = coalesce(%s, wrapped_keys),"
    " version = version + 1, updated_at = %s, sequence = taken.sequence FROM taken"
    " WHERE items.vault_id = %s AND items.item_id = %s"
    " RETURNING " + ", ".join(f"items.{c}" for c in rows.ITEM_COLUMNS.split(", ")) + ")"
    " SELECT changed.*, zk_audit_append(changed.tenant_id, %s) FROM changed"  # the event, only for a change made
)


def _list_in_snapshot(page: str) -> str:
    """(vault, vault, after item_id, limit) -> rows of (the vault's sequence, the store's epoch,
    the page's item columns), or one row of (sequence, epoch, NULLs) for an empty page. Its ORDER
    BY sorts the page's rows only (at most a page and one): below it runs the keyset scan of
    statements.py."""
    return (
        "SELECT s.sequence, s.epoch, p.* FROM (SELECT coalesce((SELECT sequence FROM vaults WHERE vault_id = %s), 0)"
        f" AS sequence, ({SQL.epoch}) AS epoch) s LEFT JOIN LATERAL ({page}) p ON TRUE ORDER BY p.item_id"
    )


_LIST_ITEMS = _list_in_snapshot(SQL.list_items)
# (vault, since, limit) -> rows of (the vault's sequence, its purge horizon, the store's epoch, a
# change's item columns), or one row with NULL items when there is no change (and 0, 0 for no
# such vault): the epoch's one row, the vault's if any, its changes if any.
_LIST_CHANGES = (
    "SELECT coalesce(v.sequence, 0), coalesce(v.purge_horizon, 0), e.epoch, c.* FROM store_epoch e"
    " LEFT JOIN vaults v ON v.vault_id = %s LEFT JOIN LATERAL"
    f" ({SQL.list_changes.replace('vault_id = %s', 'vault_id = v.vault_id', 1)}) c ON TRUE"
    " ORDER BY c.sequence"
)
_PURGE = (
    "WITH purged AS (DELETE FROM items WHERE deleted AND updated_at < %s"
    " RETURNING tenant_id, vault_id, item_id, sequence),"
    " horizons AS (SELECT vault_id, max(sequence) AS horizon FROM purged GROUP BY vault_id),"
    " raised AS (UPDATE vaults SET purge_horizon = greatest(vaults.purge_horizon, h.horizon)"
    " FROM horizons h WHERE vaults.vault_id = h.vault_id)"
    " SELECT tenant_id, vault_id, item_id FROM purged ORDER BY tenant_id, vault_id, sequence"
)
_LIST_LIVE_ITEMS = _list_in_snapshot(SQL.list_live_items)
# A chain's head before its first event: sequence 0 and the hash that comes before event 1.
_NEW_AUDIT_HEAD = "INSERT INTO audit_heads (tenant_id, sequence, hash) VALUES (%s, 0, %s) ON CONFLICT DO NOTHING"

_DELETE_ITEM = f"SELECT {rows.ITEM_COLUMNS} FROM zk_delete_item(%s, %s, %s, %s, %s, %s)"
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


def _deleted(row: tuple[Any, ...] | None) -> DeleteOutcome:
    """What zk_delete_item's row says."""
    if row is None:
        return Missing()
    item, sequence = rows.item_from_row(row)
    return ItemChange(item, sequence) if item.deleted else Stale(item.version)


def _created(item: Item, row: tuple[Any, ...] | None) -> Created:
    """What _CREATE_ITEM's row says: no row, no such vault in the item's tenant."""
    if row is None:
        raise UnknownReference(rows.unknown_vault(item))
    return Created(ItemChange(item, int(row[0])))


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


async def _revoke_tree(conn: Conn, token_id: str, actor: Actor, action: Action, *, audited: bool) -> list[str] | None:
    row = await _fetchone(conn, "SELECT principal_id, tenant_id FROM tokens WHERE token_id = %s", (token_id,))
    if row is None:
        return None
    # A tree belongs to one principal (a token mints only for its own). With the
    # principal's row locked, no mint for it is between its checks and its commit, so
    # the walk below, a statement with a fresh snapshot, sees every child there is.
    await _lock_principal(conn, row[0])
    cursor = await conn.execute(SQL.revoke_tree, (token_id,))
    revoked = sorted(r[0] for r in await cursor.fetchall())
    if audited:
        await _record(conn, audit.revoke_events(actor, action, row[1], token_id, revoked))
    return revoked


class _BusyLog:
    """One warning line per BUSY_LOG_INTERVAL at most about calls refused for a busy pool, with
    how many were since the last line: a burst that the pool cannot take is one line, not thousands."""

    def __init__(self, url: str, pool_size: int) -> None:
        self._url = url
        self._pool_size = pool_size
        self._unsaid = 0
        self._said_at: float | None = None

    def refused(self) -> None:
        self._unsaid += 1
        now = time.monotonic()
        if self._said_at is not None and now - self._said_at < BUSY_LOG_INTERVAL:
            return
        log.warning(
            "the store %s is busy: %d call(s) found all %d pooled connections held by other calls for their"
            " whole wait, and answered resource_exhausted; if this lasts, give the workers larger pools"
            " (ZKPLATFORM_STORE_POOL_SIZE) or more workers, within the database's max_connections",
            self._url,
            self._unsaid,
            self._pool_size,
        )
        self._unsaid, self._said_at = 0, now


class _Pinger:
    """The readiness probe's connection, outside the pool (made at the first ping, made again after
    a failure): it asks the database whether it answers, whatever the pool's calls hold.

    A ping answers within PING_TIMEOUT, whatever the network does: one that took all of it is
    left to end by itself, with its connection, rather than waited for (psycopg, cancelled, asks
    the server to cancel the query, over a network that may drop packets: 10 s more)."""

    def __init__(self, url: str, shown: str) -> None:
        self._url = url
        self._shown = shown
        self._conn: Conn | None = None
        self._lock = asyncio.Lock()  # one ping at a time on the one connection
        self._abandoned: set[asyncio.Task[None]] = set()

    async def ping(self) -> None:
        async with self._lock:
            attempt = asyncio.ensure_future(self._select_one())
            done, _ = await asyncio.wait({attempt}, timeout=PING_TIMEOUT)
            if not done:
                self._abandon(attempt)
                log.warning("the store %s is unavailable: no answer to a ping within %g s", self._shown, PING_TIMEOUT)
                raise StoreUnavailable
            try:
                attempt.result()
            except psycopg.OperationalError as error:
                await self._drop()
                if not _unreachable(error):
                    raise
                log.warning("the store %s is unavailable: %s", self._shown, _one_line(error))
                raise StoreUnavailable from error

    async def _select_one(self) -> None:
        if self._conn is not None and not self._conn.closed:
            try:
                await self._conn.execute("SELECT 1")
            except psycopg.OperationalError:
                # Ended by the server since the last ping (a restart nothing else noticed): that
                # says nothing of the server now; a new connection does.
                await self._drop()
            else:
                return
        self._conn = await AsyncConnection.connect(self._url, autocommit=True, connect_timeout=math.ceil(PING_TIMEOUT))
        await self._conn.execute("SELECT 1")

    def _abandon(self, attempt: asyncio.Task[None]) -> None:
        conn, self._conn = self._conn, None  # a connection left mid-query is no use for the next ping

        def ended(task: asyncio.Task[None]) -> None:
            self._abandoned.discard(task)
            if not task.cancelled():
                task.exception()  # retrieved: it was reported as the ping's timeout
            if conn is not None and not conn.closed:
                conn.pgconn.finish()

        attempt.cancel()
        self._abandoned.add(attempt)
        attempt.add_done_callback(ended)

    async def _drop(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            await conn.close()

    async def close(self) -> None:
        for attempt in list(self._abandoned):
            attempt.cancel()  # again: psycopg then gives up its cancellation and closes the connection
        await asyncio.gather(*self._abandoned, return_exceptions=True)
        await self._drop()


def _unreachable(error: psycopg.OperationalError) -> bool:
    """Whether the error says the database cannot be reached now, rather than that a statement
    of ours is wrong (those stay errors: a bug must not pass for an outage)."""
    if isinstance(error, PoolTimeout):
        return True
    state = error.sqlstate
    return state is None or state.startswith(_UNREACHABLE_CLASSES) or state in _UNREACHABLE_STATES


def _one_line(error: Exception) -> str:
    return " ".join(str(error).split()) or type(error).__name__


async def _check_connection(conn: Conn) -> None:
    """The pool's check of a connection before it hands it out: raises when it no longer works.

    The stock check (AsyncConnectionPool.check_connection) costs a round trip to the server
    on every use. A connection the server ended (restarted, stopped, its backend terminated)
    has its goodbye or end of file waiting to be read: a poll of the socket, which costs no
    round trip, sees that, and only then does the stock check run (it may be a notice)."""
    if conn.closed or conn.broken:
        msg = "the connection is closed"
        raise psycopg.OperationalError(msg)
    socket = select.poll()  # not select.select, which refuses descriptors above 1023
    socket.register(conn.fileno(), select.POLLIN)
    if socket.poll(0):
        await AsyncConnectionPool.check_connection(conn)


def _patch_params(patch: ItemPatch) -> tuple[object, ...]:
    """The patch's columns; None (SQL NULL) for a column it leaves as it is, which the update coalesces."""
    return (
        patch.kind,
        patch.title_hash,
        rows.payload_to_text(patch.payload),
        None if patch.wrapped_keys is None else rows.keys_to_text(patch.wrapped_keys),
    )


def _contended(vault_id: str, item_id: str) -> RuntimeError:
    return RuntimeError(f"item {item_id} in vault {vault_id} was purged and created again during every attempt")


async def _first_connection(url: str, deadline: float) -> None:
    """Connect once, so that the pool never retries what cannot heal."""
    shown = display_url(url)
    delays = iter(RETRY_DELAYS)
    while True:
        try:
            conn = await AsyncConnection.connect(url, connect_timeout=max(2, math.ceil(deadline - time.monotonic())))
        except psycopg.Error as error:
            reason = _reason(error, url)
            if not any(state in reason.lower() for state in _HEALING):
                advice = next((a for text, a in _ADVICE if re.search(text, reason.lower())), "check the store URL")
                msg = f"cannot open the store {shown}: {reason}: {advice}"
                raise StoreOpenError(msg) from None
            delay = next(delays, RETRY_DELAYS[-1])
            if time.monotonic() + delay >= deadline:
                msg = f"cannot open the store {shown}: not ready within {OPEN_TIMEOUT:g} s ({reason}): try again later"
                raise StoreOpenError(msg) from None
            await asyncio.sleep(delay)
        else:
            await conn.close()
            return


def _reason(error: psycopg.Error, url: str) -> str:
    """libpq's message in one line, without what libpq prefixes to it, and never the password."""
    # The first line: libpq's hints that follow it say less than the advice we add.
    text = str(error).strip().partition("\n")[0] or type(error).__name__
    text = re.sub(r"^connection failed: |connection to server at .*? failed: |FATAL: +", "", text)
    password = urlsplit(url).password
    for form in {password, unquote(password or "")} - {None, ""}:
        text = text.replace(str(form), "***")
    return text


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


async def _add_device(conn: Conn, tenant_id: str, index: int, added: AddDevice) -> None:
    """Store the device an entry of the tenant's log at `index` adds; UnknownReference when its
    principal is not of the tenant, AlreadyExists when either of its key ids names a device
    (with the head's row locked, a device added by an append before this one is seen here)."""
    principal_id = added.device.principal_id
    missing = f"no principal {principal_id} in tenant {tenant_id}"
    await _require(conn, KEYS.principal_in_tenant, (principal_id, tenant_id), missing)
    for key_id in (added.device.device_id, added.device.agreement_key_id):
        if await _fetchone(conn, KEYS.find_device, (tenant_id, key_id, tenant_id, key_id)) is not None:
            raise AlreadyExists(key_rows.taken(tenant_id, key_id))
    await _insert(
        conn, KEYS.add_device, key_rows.device_params(tenant_id, index, added), f"device {added.device.device_id}"
    )


async def _fetchone(conn: Conn, query: str, params: Sequence[object] = ()) -> tuple[Any, ...] | None:
    return await (await conn.execute(query, params)).fetchone()


async def _add_chunk(conn: Conn, chunk: list[Item], known: set[tuple[str, str]]) -> None:
    if unchecked := list({(i.vault_id, i.tenant_id) for i in chunk} - known):
        cursor = await conn.execute(
            "SELECT vault_id, tenant_id FROM vaults WHERE (vault_id, tenant_id) IN"
            " (SELECT * FROM unnest(%s::text[], %s::text[]))",
            ([vault_id for vault_id, _ in unchecked], [tenant_id for _, tenant_id in unchecked]),
        )
        known.update(await cursor.fetchall())
    addable, refused = rows.until_unknown_vault(chunk, known)
    # One statement per vault for the sequence numbers and one batch for the rows.
    first = {
        vault_id: await _take_sequences(conn, vault_id, count) for vault_id, count in rows.per_vault(addable).items()
    }
    try:
        async with conn.transaction(), conn.cursor() as cursor:  # a savepoint: see the store without the chunk
            await cursor.executemany(
                SQL.add_item,
                rows.numbered_items(addable, first),
            )
    except errors.UniqueViolation:
        cursor = await conn.execute(
            "SELECT vault_id, item_id FROM items WHERE (vault_id, item_id) IN"
            " (SELECT * FROM unnest(%s::text[], %s::text[]))",
            ([i.vault_id for i in addable], [i.item_id for i in addable]),
        )
        stored = set(await cursor.fetchall())
        duplicate = rows.first_duplicate(addable, lambda i: (i.vault_id, i.item_id) in stored)
        raise AlreadyExists(f"{duplicate} already exists") from None
    if refused is not None:
        raise UnknownReference(rows.unknown_vault(refused))


async def _take_sequences(conn: Conn, vault_id: str, count: int) -> int:
    """Take the vault's next `count` sequence numbers; the first of them."""
    row = await _fetchone(
        conn,
        SQL.take_sequences,
        (count, vault_id, count),
    )
    assert row is not None  # the vault exists: checked in this transaction
    return int(row[0])


async def _lock_principal(conn: Conn, principal_id: str) -> None:
    await conn.execute("SELECT 1 FROM principals WHERE principal_id = %s FOR UPDATE", (principal_id,))


async def _usable_principal(conn: Conn, principal_id: str) -> None:
    """Lock the principal's row; UnknownReference without it, PrincipalDisabled when it is disabled."""
    row = await _fetchone(conn, "SELECT disabled FROM principals WHERE principal_id = %s FOR UPDATE", (principal_id,))
    if row is None:
        raise UnknownReference(f"no principal {principal_id}")
    if row[0]:
        raise PrincipalDisabled(f"principal {principal_id} is disabled")


async def _vault_tenant(conn: Conn, vault_id: str) -> str:
    row = await _fetchone(conn, SQL.vault_tenant, (vault_id,))
    if row is None:
        raise UnknownReference(f"no vault {vault_id}")
    return str(row[0])


async def _add_token(conn: Conn, token: TokenRecord) -> None:
    await _usable_principal(conn, token.principal_id)
    await _insert(
        conn,
        SQL.add_token,
        rows.token_params(token),
        "token",
    )


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
