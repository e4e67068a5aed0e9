"""Durable stores for the benchmark: a fresh SQLite file or PostgreSQL database
per server, migrated and seeded through the store ports before the server starts.

A setup that serves another commit's code (bench/other_commits.py) has its store migrated
and seeded by that code, in a process of its own (`python -m bench.stores`): the
schema is that commit's.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg
from psycopg import sql

from bench.other_commits import ROOT, pythonpath
from bench.seed import Layout, Tokens, seed
from tests.pg import LOCAL_URL, ThrowawayCluster, answers
from zkplatform.store import open_store
from zkplatform.wiring import Platform

PEPPER = secrets.token_bytes(32)
PEPPER_ENV = {"ZKPLATFORM_TOKEN_PEPPER": base64.urlsafe_b64encode(PEPPER).rstrip(b"=").decode()}
SEED_TIMEOUT_S = 600


async def _seed(url: str, layout: Layout, pepper: bytes = PEPPER) -> Tokens:
    store = await open_store(url, check_schema=False)
    try:
        await store.migrate()
        platform = Platform.build(store, pepper)
        return await seed(store, platform.issuer, layout)
    finally:
        await store.close()


def seeded(url: str, layout: Layout, code: str = "") -> Tokens:
    """Migrate and seed the store at `url` with the code of the commit `code` ("" for this tree's)."""
    if not code:
        return asyncio.run(_seed(url, layout))
    with _tokens_file() as tokens:
        shape = json.dumps(dataclasses.asdict(layout))
        env = {**os.environ, **PEPPER_ENV, "PYTHONPATH": pythonpath(code)}
        command = [sys.executable, "-m", "bench.stores", url, shape, str(tokens)]
        subprocess.run(command, env=env, cwd=ROOT, check=True, timeout=SEED_TIMEOUT_S)
        return Tokens.read(tokens)


@contextmanager
def _tokens_file() -> Iterator[Path]:
    directory = Path(tempfile.mkdtemp(prefix="zk-bench-seed-"))
    try:
        yield directory / "tokens.json"
    finally:
        shutil.rmtree(directory)


def sqlite_store(directory: Path, layout: Layout, code: str = "") -> tuple[str, Tokens]:
    url = f"sqlite:///{directory / 'bench.db'}"  # an absolute path: sqlite:////tmp/...
    return url, seeded(url, layout, code)


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
    def database(self, layout: Layout, code: str = "") -> Iterator[tuple[str, Tokens]]:
        name = f"zk_bench_{secrets.token_hex(6)}"
        with psycopg.connect(self.url, autocommit=True) as admin:
            admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        try:
            url = urlunsplit(urlsplit(self.url)._replace(path=f"/{name}"))
            yield url, seeded(url, layout, code)
        finally:
            with psycopg.connect(self.url, autocommit=True) as admin:
                admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def _main(url: str, shape: str, tokens: str) -> None:
    """Seed as `seeded` asks, with the code on PYTHONPATH and the server's pepper from its environment."""
    pepper = base64.urlsafe_b64decode(os.environ["ZKPLATFORM_TOKEN_PEPPER"] + "==")
    layout = Layout(**json.loads(shape))
    asyncio.run(_seed(url, layout, pepper)).write(Path(tokens))


if __name__ == "__main__":
    _main(*sys.argv[1:])
