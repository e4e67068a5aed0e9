"""PostgreSQL for the tests: a fresh database per test on some server.

The server, found once per session: $ZKPLATFORM_TEST_POSTGRES_URL; else the
one on 127.0.0.1:5432 (trust auth, database `test`) when it answers within
2 s; else a throwaway cluster started from local PostgreSQL binaries. Only
when none works are the tests skipped, with the reason; with CI=true they fail
instead, because CI on this project's machine must run them.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import secrets
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest
from psycopg import sql

from tests.e2e.server import free_port

LOCAL_URL = "postgresql://postgres@127.0.0.1:5432/test"
CONNECT_TIMEOUT = 2  # seconds
TOOL_TIMEOUT = 120  # seconds for initdb or pg_ctl, which waits at most 30 s itself


def answers(url: str) -> str | None:
    """None when the server at url takes a connection; else why not."""
    try:
        with psycopg.connect(url, connect_timeout=CONNECT_TIMEOUT):
            return None
    except psycopg.Error as error:
        return str(error).strip() or type(error).__name__


class ThrowawayCluster:
    """A throwaway cluster from the local binaries, on a free port of 127.0.0.1 (its unix socket
    in its own directory), started; as the `postgres` user when we are root, since initdb and
    postgres refuse to run as root. `halt()` stops the server and `start()` starts it again on
    the same port (an outage a test makes itself); `stop()` stops it for good and removes it."""

    def __init__(self) -> None:
        bins = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))
        if not bins:
            msg = "no local PostgreSQL binaries (/usr/lib/postgresql/*/bin/initdb)"
            raise RuntimeError(msg)
        self._bin = bins[-1].parent
        self._as: list[str] = []
        if os.geteuid() == 0:
            try:
                pwd.getpwnam("postgres")
            except KeyError:
                msg = "running as root and there is no `postgres` user to run initdb as"
                raise RuntimeError(msg) from None
            self._as = ["runuser", "-u", "postgres", "--"]
        # Not under pytest's tmp_path: its parents are private to us, and the server runs as `postgres`.
        self._dir = Path(tempfile.mkdtemp(prefix="zk-pg-"))
        self._data = self._dir / "data"
        self.port = free_port()
        try:
            if self._as:
                shutil.chown(self._dir, "postgres")
            self._run("initdb", "-D", str(self._data), "-A", "trust", "-U", "postgres", "--no-sync")
            self.start()
        except BaseException:
            with contextlib.suppress(RuntimeError):  # the first failure is the one to report
                self.stop()
            raise
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def start(self) -> None:
        """Start the server on its port; pg_ctl -w returns once it accepts connections (at most 30 s)."""
        # The server's output goes to a file: a server holding our pipes would keep run() waiting.
        options = f"-p {self.port} -k {self._dir} -h 127.0.0.1"
        log = str(self._dir / "server.log")
        self._run("pg_ctl", "-D", str(self._data), "-l", log, "-o", options, "-w", "-t", "30", "start")

    def halt(self, mode: str = "immediate") -> None:
        """Stop the server (`immediate`: as a crash would, every connection cut), keeping its data."""
        self._run("pg_ctl", "-D", str(self._data), "-m", mode, "-w", "-t", "30", "stop")

    def _run(self, tool: str, *args: str) -> None:
        command = [*self._as, str(self._bin / tool), *args]
        try:
            subprocess.run(command, check=True, capture_output=True, timeout=TOOL_TIMEOUT)
        except subprocess.CalledProcessError as error:
            output = (error.stderr or error.stdout or b"").decode(errors="replace").strip()
            msg = f"{tool} failed: {output}"
            raise RuntimeError(msg) from None
        except subprocess.TimeoutExpired:
            msg = f"{tool} did not finish within {TOOL_TIMEOUT} s"
            raise RuntimeError(msg) from None

    def stop(self) -> None:
        try:
            if (self._data / "postmaster.pid").exists():
                self.halt()
        finally:
            shutil.rmtree(self._dir, ignore_errors=True)


@pytest.fixture
def own_postgres() -> Iterator[ThrowawayCluster]:
    """A PostgreSQL server of the test's own, which it may stop and start again (an outage);
    the test is skipped, saying why, when this machine cannot run one."""
    try:
        cluster = ThrowawayCluster()
    except (RuntimeError, OSError, subprocess.SubprocessError) as error:
        pytest.skip(f"this test starts and stops a PostgreSQL server of its own, and cannot here: {error}")
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """The URL of a server (and a database on it to connect to) where tests may create databases."""
    configured = os.environ.get("ZKPLATFORM_TEST_POSTGRES_URL")
    if configured:
        yield configured
        return
    refused = answers(LOCAL_URL)
    if refused is None:
        yield LOCAL_URL
        return
    try:
        cluster = ThrowawayCluster()
    except (RuntimeError, OSError, subprocess.SubprocessError) as error:
        reason = (
            f"PostgreSQL tests need a server: {LOCAL_URL} does not answer ({refused}); no throwaway cluster ({error})"
        )
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    try:
        yield cluster.url
    finally:
        cluster.stop()


@pytest.fixture
def postgres_url(request: pytest.FixtureRequest, postgres_server: str) -> Iterator[str]:
    """The URL of a new, empty database, dropped (even with connections left open) after the test.

    Synchronous on purpose: async fixtures (tests/contract's `store`) ask for it with
    request.getfixturevalue, which cannot run an async fixture inside the running loop.
    """
    if request.node.get_closest_marker("postgres") is None:
        # `-m "not postgres"` (make test-fast) must not select a test that needs the server.
        pytest.fail(
            f"{request.node.nodeid} uses PostgreSQL without the postgres marker: ask for postgres_url by name, "
            "give its parameter the value 'postgresql' (tests/conftest.py), or add @pytest.mark.postgres",
            pytrace=False,
        )
    name = f"zk_test_{secrets.token_hex(6)}"
    with psycopg.connect(postgres_server, autocommit=True, connect_timeout=CONNECT_TIMEOUT) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield urlunsplit(urlsplit(postgres_server)._replace(path=f"/{name}"))
    finally:
        with psycopg.connect(postgres_server, autocommit=True, connect_timeout=CONNECT_TIMEOUT) as admin:
            admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
