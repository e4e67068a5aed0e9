"""Durable stores for the benchmark: a fresh SQLite file or PostgreSQL database
per server, migrated and seeded through the store ports before the server starts."""

from __future__ import annotations

import asyncio
import base64
import secrets
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg
from psycopg import sql

from bench.seed import Layout, Tokens, seed
from tests.pg import LOCAL_URL, ThrowawayCluster, answers
from zkplatform.store import open_store
from zkplatform.wiring import Platform

PEPPER = secrets.token_bytes(32)
PEPPER_ENV = {"ZKPLATFORM_TOKEN_PEPPER": base64.urlsafe_b64encode(PEPPER).rstrip(b"=").decode()}


async def _seed(url: str, layout: Layout) -> Tokens:
    store = await open_store(url, check_schema=False)
    try:
        await store.migrate()
        platform = Platform.build(store, PEPPER)
        return await seed(store, platform.issuer, layout)
    finally:
        await store.close()


def sqlite_store(directory: Path, layout: Layout) -> tuple[str, Tokens]:
    url = f"sqlite:///{directory / 'bench.db'}"  # an absolute path: sqlite:////tmp/...
    return url, asyncio.run(_seed(url, layout))


class PostgresServer:
    """The machine's PostgreSQL when it answers on 127.0.0.1:5432, else a throwaway cluster."""

    def __init__(self, stack: ExitStack) -> None:
        self._stack = stack
        self._url: str | None = None

    @property
    def url(self) -> str:
        if self._url is None:
            if answers(LOCAL_URL) is None:
                self._url = LOCAL_URL
            else:
                cluster = ThrowawayCluster()
                self._stack.callback(cluster.stop)
                self._url = cluster.url
        return self._url

    @contextmanager
    def database(self, layout: Layout) -> Iterator[tuple[str, Tokens]]:
        name = f"zk_bench_{secrets.token_hex(6)}"
        with psycopg.connect(self.url, autocommit=True) as admin:
            admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        try:
            url = urlunsplit(urlsplit(self.url)._replace(path=f"/{name}"))
            yield url, asyncio.run(_seed(url, layout))
        finally:
            with psycopg.connect(self.url, autocommit=True) as admin:
                admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
