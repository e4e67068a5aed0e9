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
readiness knows the store down (rpc/interceptors/store_down.py).

One module a port (directory, items, tokens, limits, audit, key_log), each a mixin over the
one Database (database.py: the pool, the calls' connections and transactions, and the SQL more
than one port shares), composed here into the one PostgresStore with its schema (schema.py);
connection.py reaches the server. A use case is one transaction on one connection whichever
port it belongs to, and several change what others read in that transaction (disabling a
principal revokes its tokens, every change records its audit events), which separate objects
would each have to reach into.
"""

from __future__ import annotations

import asyncio
import contextlib
import time

from psycopg_pool import AsyncConnectionPool, PoolTimeout

from zkplatform.observability import probes
from zkplatform.store import StoreOpenError
from zkplatform.store.migrations import check_version
from zkplatform.store.notify import ChangeFeed
from zkplatform.store.postgres import connection
from zkplatform.store.postgres.audit import PostgresAudit
from zkplatform.store.postgres.connection import Conn, _check_connection, _first_connection
from zkplatform.store.postgres.directory import PostgresDirectory
from zkplatform.store.postgres.items import PostgresItems
from zkplatform.store.postgres.key_log import PostgresKeyLog
from zkplatform.store.postgres.limits import PostgresLimits
from zkplatform.store.postgres.schema import DIALECT, PostgresSchema
from zkplatform.store.postgres.tokens import PostgresTokens

# Seconds a use case waits for a pooled connection before it fails: with StoreBusy when other
# calls held every connection the pool may open all along (its caller gets `resource_exhausted`),
# else with StoreUnavailable (none could be made: `unavailable`). Either way it tries again later.
ACQUIRE_TIMEOUT = 5.0
# Seconds the pool goes on trying to replace a lost connection in the background. Its delays
# double from 1 s, so after a long outage its next attempt could be minutes away; given up
# instead, a new one starts, at once, with the next call that needs a connection.
RECONNECT_TIMEOUT = 5.0


class PostgresStore(
    PostgresSchema, PostgresDirectory, PostgresItems, PostgresTokens, PostgresLimits, PostgresAudit, PostgresKeyLog
):
    @classmethod
    async def open(
        cls, url: str, *, check_schema: bool = True, max_size: int = 10, acquire_timeout: float = ACQUIRE_TIMEOUT
    ) -> PostgresStore:
        """Open a pool on the database at url; StoreOpenError at once when the
        server refuses it for good (credentials, no such database, nothing
        listening), after OPEN_TIMEOUT when it stays unready (starting up, full).
        SchemaError (unless told not to check) when it is not at this build's schema."""
        deadline = time.monotonic() + connection.OPEN_TIMEOUT
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
