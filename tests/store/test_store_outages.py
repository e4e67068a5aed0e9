"""A store that cannot be reached answers `unavailable` with a RetryInfo and the reason
STORE_UNAVAILABLE, never `internal`; once it is back, the next call works.

PostgreSQL is made unreachable by a TCP proxy of the test's own between the app and the
server, stopped (every connection through it cut, new ones refused) and started again;
SQLite by another connection holding the file's write lock past the busy timeout.
Errors of the SQL itself stay what they are: a bug must not pass for an outage.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx
import psycopg
import pytest

from tests.connect import JSON, brief, detail, error_of, headers
from tests.e2e.server import eventually, free_port
from tests.store.stores import closing, migrated
from tests.world import BASE_URL, PEPPER, FakeClock, World
from zkplatform.app import create_app
from zkplatform.config import Settings
from zkplatform.domain.errors import StoreUnavailable
from zkplatform.domain.ports.store import Store
from zkplatform.store.postgres import PostgresStore
from zkplatform.store.sqlite import SQLiteStore
from zkplatform.wiring import Platform
from zkplatform_api.platform.v1 import vault_pb2

LIST_ITEMS = "/platform.v1.VaultService/ListItems"
CREATE_ITEM = "/platform.v1.VaultService/CreateItem"
UNAVAILABLE = {
    "code": "unavailable",
    "message": "the store is unavailable; try again later",
    "reason": "STORE_UNAVAILABLE",
}


class Proxy:
    """A TCP proxy on 127.0.0.1 to one server. Stopped, it cuts every connection it carries
    and refuses new ones, as a server that went down would; started again, on the same port.
    Frozen, it carries nothing more and answers nothing, but cuts nothing and takes new
    connections, as a network that drops every packet would (stop, then start, to heal it)."""

    def __init__(self, host: str, port: int) -> None:
        self._target = (host, port)
        self.port = free_port()
        self._server: asyncio.Server | None = None
        self._carried: set[asyncio.StreamWriter] = set()
        self._pipes: set[asyncio.Task[None]] = set()
        self._frozen = False

    async def start(self) -> None:
        self._frozen = False
        self._server = await asyncio.start_server(self._carry, "127.0.0.1", self.port)

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None
        for writer in self._carried:
            writer.transport.abort()
        self._carried.clear()
        for pipe in self._pipes:
            pipe.cancel()
        await asyncio.gather(*self._pipes, return_exceptions=True)

    async def freeze(self) -> None:
        self._frozen = True
        for pipe in self._pipes:
            pipe.cancel()  # what is under way stays unanswered; nothing is cut
        await asyncio.gather(*self._pipes, return_exceptions=True)

    async def _carry(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        if self._frozen:
            self._carried.add(client_writer)  # taken, and never answered
            return
        try:
            server_reader, server_writer = await asyncio.open_connection(*self._target)
        except OSError:
            client_writer.transport.abort()
            return
        if self._server is None:  # stopped while this connection was being made
            client_writer.transport.abort()
            server_writer.transport.abort()
            return
        self._carried |= {client_writer, server_writer}
        for reader, writer in ((client_reader, server_writer), (server_reader, client_writer)):
            pipe = asyncio.create_task(_pipe(reader, writer))
            self._pipes.add(pipe)
            pipe.add_done_callback(self._pipes.discard)


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(OSError, asyncio.IncompleteReadError):
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    writer.transport.abort()


@contextlib.asynccontextmanager
async def serving(store: Store, clock: FakeClock) -> AsyncIterator[tuple[httpx.AsyncClient, World]]:
    platform = Platform.build(store, PEPPER, clock)
    world = await World.seed(platform)
    app = create_app(Settings(), platform=platform)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE_URL) as client:
        yield client, world


async def list_items(client: httpx.AsyncClient, world: World) -> httpx.Response:
    request = vault_pb2.ListItemsRequest(vault_id="acme-shared")
    return await client.post(LIST_ITEMS, content=JSON.encode(request), headers=headers(JSON, world.token("alice")))


async def answers_until(client: httpx.AsyncClient, path: str, status: int, seconds: float = 20.0) -> httpx.Response:
    """GET `path` until it answers `status`, for at most `seconds`: what a probe finds comes when it comes."""
    deadline = asyncio.get_running_loop().time() + seconds
    while True:
        response = await client.get(path)
        if response.status_code == status or asyncio.get_running_loop().time() > deadline:
            return response
        await asyncio.sleep(0.05)


def assert_unavailable(response: httpx.Response) -> None:
    assert response.status_code == 503, response.text
    error = error_of(response)
    assert brief(error) == UNAVAILABLE
    assert detail(error, "google.rpc.RetryInfo")["retryDelay"] == "1s"


# PostgreSQL


@pytest.fixture
async def proxy(postgres_url: str) -> AsyncIterator[tuple[Proxy, str]]:
    """A proxy to the test's database, started, and the store URL that goes through it."""
    await migrated(postgres_url)
    parts = urlsplit(postgres_url)
    proxy = Proxy(parts.hostname or "127.0.0.1", parts.port or 5432)
    await proxy.start()
    user = f"{parts.username}@" if parts.username else ""
    try:
        yield proxy, urlunsplit(parts._replace(netloc=f"{user}127.0.0.1:{proxy.port}"))
    finally:
        await proxy.stop()


async def test_a_database_that_goes_away_answers_unavailable_and_the_first_call_after_it_works(
    proxy: tuple[Proxy, str], clock: FakeClock
) -> None:
    gateway, url = proxy
    async with closing(PostgresStore.open(url, acquire_timeout=3.0)) as store, serving(store, clock) as (client, world):
        before = await list_items(client, world)
        await gateway.stop()
        during = await list_items(client, world)
        await gateway.start()
        # Known down, calls are refused at once (rpc/interceptors/store_down.py) until a probe finds the
        # store back: readiness says when; the first call after it must not meet a dead connection.
        back = await answers_until(client, "/readyz", 200)
        after = await list_items(client, world)

    assert before.status_code == 200, ("before", before.text)
    assert_unavailable(during)
    assert back.status_code == 200, back.text
    assert after.status_code == 200, ("after", after.text)
    assert after.json()["items"] == before.json()["items"]


async def test_a_pool_whose_connections_were_ended_by_the_server_replaces_them(
    postgres_url: str, clock: FakeClock
) -> None:
    """A restart, or an operator's pg_terminate_backend: every pooled connection is ended by the
    server. The pool's check finds them ended before they are used: the next call works."""
    await migrated(postgres_url)
    async with closing(PostgresStore.open(postgres_url)) as store, serving(store, clock) as (client, world):
        assert (await list_items(client, world)).status_code == 200
        with psycopg.connect(postgres_url, autocommit=True) as admin:
            ended = admin.execute(
                "SELECT pid, pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE datname = current_database() AND pid <> pg_backend_pid()"
            ).fetchall()
            # Ended once their backends have exited (their goodbye then waits on the pool's sockets);
            # a call in the very instant of the termination may still meet one: it answers unavailable.
            gone = eventually(
                lambda: (
                    not admin.execute(
                        "SELECT 1 FROM pg_stat_activity WHERE pid = ANY(%s)", ([pid for pid, _ in ended],)
                    ).fetchall()
                )
            )
        assert ended
        assert gone
        after = await list_items(client, world)

    assert after.status_code == 200, after.text


async def test_an_error_of_the_sql_itself_is_not_an_outage(migrated_url: str) -> None:
    async with closing(PostgresStore.open(migrated_url)) as store:
        with pytest.raises(psycopg.errors.UndefinedTable):
            await store._all("SELECT * FROM no_such_table")
        with pytest.raises(StoreUnavailable):
            await store._all("SELECT pg_terminate_backend(pg_backend_pid())")  # 57P01: the server ends it


# SQLite


async def test_a_sqlite_file_locked_past_the_busy_timeout_answers_unavailable(tmp_path: Path, clock: FakeClock) -> None:
    path = tmp_path / "store.db"
    await migrated(f"sqlite:///{path}")
    async with closing(SQLiteStore.open(path, busy_timeout_ms=200)) as store, serving(store, clock) as (client, world):
        holder = sqlite3.connect(path, isolation_level=None)
        try:
            holder.execute("BEGIN IMMEDIATE")  # another process writing, for longer than the busy timeout
            during = await create_item(client, world, "while-locked")
            read = await list_items(client, world)  # reads never wait for a writer (WAL)
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        after = await create_item(client, world, "after-the-lock")

    assert_unavailable(during)
    assert read.status_code == 200, read.text
    assert after.status_code == 200, after.text


async def test_an_error_of_the_sql_itself_is_not_an_outage_on_sqlite(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    await migrated(f"sqlite:///{path}")
    async with closing(SQLiteStore.open(path)) as store:

        def broken(conn: sqlite3.Connection) -> Any:
            return conn.execute("SELECT * FROM no_such_table").fetchall()

        with pytest.raises(sqlite3.OperationalError, match="no such table"):
            await store._read(broken)
        with pytest.raises(sqlite3.OperationalError, match="no such table"):
            await store._write(broken)


async def create_item(client: httpx.AsyncClient, world: World, item_id: str) -> httpx.Response:
    payload = vault_pb2.EncryptedPayload(alg="A256GCM", nonce="bm9uY2Vub25jZW5v", ciphertext="c2VjcmV0", version=1)
    key = vault_pb2.WrappedKey(recipient_id="alice", wrap_alg="A256KW", wrapped_key="a2V5a2V5a2V5a2V5")
    request = vault_pb2.CreateItemRequest(
        vault_id="acme-shared", item_id=item_id, kind="login", encrypted_payload=payload, wrapped_keys=[key]
    )
    return await client.post(CREATE_ITEM, content=JSON.encode(request), headers=headers(JSON, world.token("alice")))
