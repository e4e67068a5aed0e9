"""PostgreSQL for the tests: a fresh database per test on some server.

The server, found once per session: $ZKPLATFORM_TEST_POSTGRES_URL; else the
one on 127.0.0.1:5432 (trust auth, database `test`) when it answers; else a
throwaway cluster started from local PostgreSQL binaries. Only when none
exists are the tests skipped, with the reason; under CI they fail instead,
because CI on this project's machine must run them.
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest

LOCAL_URL = "postgresql://postgres@127.0.0.1:5432/test"


def _answers(url: str) -> bool:
    try:
        with psycopg.connect(url, connect_timeout=2):
            return True
    except psycopg.Error:
        return False


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class _Cluster:
    """A throwaway cluster from the local binaries, as the `postgres` user when we are root."""

    def __init__(self) -> None:
        bins = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))
        if not bins:
            msg = "no PostgreSQL server answers and no local binaries (initdb) are installed"
            raise RuntimeError(msg)
        self._bin = bins[-1].parent
        self._dir = Path(tempfile.mkdtemp(prefix="zk-pg-"))
        self._port = _free_port()
        self._as = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        if self._as:
            shutil.chown(self._dir, "postgres")
        data = self._dir / "data"
        self._run("initdb", "-D", str(data), "-A", "trust", "-U", "postgres", "--no-sync")
        self._run(
            "pg_ctl", "-D", str(data), "-w", "-t", "30", "-o", f"-p {self._port} -k {self._dir} -h 127.0.0.1", "start"
        )
        self.url = f"postgresql://postgres@127.0.0.1:{self._port}/postgres"

    def _run(self, tool: str, *args: str) -> None:
        subprocess.run([*self._as, str(self._bin / tool), *args], check=True, capture_output=True, timeout=120)

    def stop(self) -> None:
        self._run("pg_ctl", "-D", str(self._dir / "data"), "-m", "immediate", "-w", "stop")
        shutil.rmtree(self._dir, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    configured = os.environ.get("ZKPLATFORM_TEST_POSTGRES_URL")
    if configured:
        yield configured
        return
    if _answers(LOCAL_URL):
        yield LOCAL_URL
        return
    try:
        cluster = _Cluster()
    except (RuntimeError, OSError, subprocess.SubprocessError) as error:
        reason = f"PostgreSQL tests need a server: {error}"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    try:
        yield cluster.url
    finally:
        cluster.stop()


@pytest.fixture
def postgres_url(postgres_server: str) -> Iterator[str]:
    """The URL of a new, empty database, dropped after the test."""
    name = f"zk_test_{secrets.token_hex(6)}"
    with psycopg.connect(postgres_server, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    parts = urlsplit(postgres_server)
    try:
        yield urlunsplit(parts._replace(path=f"/{name}"))
    finally:
        with psycopg.connect(postgres_server, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
