"""Reaching the PostgreSQL server: the first connection and why it was refused, the pool's check of
a connection, the ping's own connection, what says a server is unreachable, the log of a busy pool."""

from __future__ import annotations

import asyncio
import logging
import math
import re
import select
import time
from typing import Any
from urllib.parse import unquote, urlsplit

import psycopg
from psycopg import AsyncConnection
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from zkplatform.domain.errors import StoreUnavailable
from zkplatform.store import StoreOpenError, display_url

log = logging.getLogger(__package__)  # the store's one logger, named as before its split
OPEN_TIMEOUT = 10.0  # seconds to wait for a server that may yet accept connections
# Seconds a ping (readiness: domain/readiness.py) may take, connecting included: a server that
# does not answer within it is taken for unreachable.
PING_TIMEOUT = 2.0
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
Conn = AsyncConnection[tuple[Any, ...]]


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
    the server to cancel the query, over a network that may drop packets: far longer than a ping
    may take)."""

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
