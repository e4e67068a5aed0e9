"""Starting and stopping a real `zkplatform serve`: what an operator sees when it cannot start, and when it stops."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
from pathlib import Path

import httpx
import pytest

from tests.e2e.server import STOP_TIMEOUT_S, free_port, run_serve, serving

# Our own lines: an ISO 8601 time with its UTC offset, the pid, the level, the logger.
LIFECYCLE_LINE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d{4} \[\d+\] INFO zkplatform: (?P<message>.*)$")


def _refused(result: subprocess.CompletedProcess[str], message: str) -> None:
    """Exit code 2 and one line on standard error that says what to do; nothing claims to be serving."""
    assert result.returncode == 2, result.stderr
    assert result.stderr.count("\n") == 1, result.stderr
    assert message in result.stderr
    assert "Traceback" not in result.stderr
    assert "listening" not in result.stderr
    assert result.stdout == ""


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_port_in_use_is_one_line(tmp_path: Path, workers: str) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        bind = f"127.0.0.1:{taken.getsockname()[1]}"
        result = run_serve(tmp_path, "--store", "memory:", "--bind", bind, "--workers", workers)

    _refused(result, f"{bind} is already in use: stop what listens there, or choose another --bind")


@pytest.mark.parametrize("bind", ["18203", "127.0.0.1:99999", "127.0.0.1:abc", "127.0.0.1:0", "::1:8080", ":8080"])
def test_a_bad_bind_is_one_line(tmp_path: Path, bind: str) -> None:
    result = run_serve(tmp_path, "--store", "memory:", "--bind", bind)

    _refused(
        result,
        f"argument --bind: HOST:PORT expected, with a port from 1 to 65535 (e.g. 127.0.0.1:8080 or [::1]:8080), "
        f"not {bind!r}",
    )


def test_a_second_server_on_the_port_refuses_to_start(tmp_path: Path) -> None:
    with serving(tmp_path, "--store", "memory:", "--workers", "2") as server:
        bind = server.base_url.removeprefix("http://")
        second = run_serve(tmp_path, "--store", "memory:", "--bind", bind, "--workers", "2")
        single = run_serve(tmp_path, "--store", "memory:", "--bind", bind)
        still = httpx.get(f"{server.base_url}/healthz", timeout=10)

    port = bind.rsplit(":", 1)[1]
    _refused(second, f"another zkplatform server already serves port {port}: stop it, or choose another --bind")
    _refused(single, f"another zkplatform server already serves port {port}")
    assert still.text == "ok\n"


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("postgresql://postgres:s3cret-pw@127.0.0.1:5432/no_such_db_xyz", "no_such_db_xyz"),
        (f"postgresql://postgres:s3cret-pw@127.0.0.1:{free_port()}/zk", "postgres:***@127.0.0.1"),
        ("sqlite:///./garbage.db", "garbage.db"),
        ("sqlite:///./a-file/zk.db", "a-file"),
        (
            "postgresql://postgres:s3cret-pw@[::1:5432/zk",
            "malformed store URL 'postgresql://postgres:***@[::1:5432/zk'",
        ),
    ],
    ids=[
        "postgresql-no-such-database",
        "postgresql-nobody-listening",
        "sqlite-not-a-database",
        "sqlite-under-a-file",
        "postgresql-malformed",
    ],
)
def test_an_unusable_store_is_one_line(tmp_path: Path, url: str, message: str) -> None:
    (tmp_path / "garbage.db").write_bytes(os.urandom(8192))
    (tmp_path / "a-file").write_text("a regular file, where a directory would be\n")

    result = run_serve(tmp_path, "--store", url)

    _refused(result, message)
    assert "s3cret-pw" not in result.stderr


@pytest.mark.parametrize(
    ("workers", "how"),
    [("1", "sigterm"), ("1", "ctrl-c"), ("2", "sigterm"), ("2", "ctrl-c")],
)
def test_stopping_prints_no_traceback_and_exits_0(tmp_path: Path, workers: str, how: str) -> None:
    with serving(tmp_path, "--store", "memory:", "--workers", workers) as server:
        if how == "ctrl-c":  # a terminal's Ctrl-C signals the whole process group
            os.killpg(server.process.pid, signal.SIGINT)
        else:
            server.process.send_signal(signal.SIGTERM)
        code = server.process.wait(timeout=STOP_TIMEOUT_S)
        log = server.log()

    assert code == 0, log
    assert "Traceback" not in log
    assert "Bad file descriptor" not in log
    assert log.splitlines()[-1].endswith("INFO zkplatform: stopped"), log


def test_lifecycle_lines_are_ours_with_a_time_zone_and_no_access_log(tmp_path: Path) -> None:
    with serving(tmp_path, "--store", "memory:", "--workers", "2") as server:
        httpx.get(f"{server.base_url}/healthz?access_token=leaked-secret-value", timeout=10)
    log = server.log()

    ours = [match["message"] for line in log.splitlines() if (match := LIFECYCLE_LINE.match(line))]
    stopping = "stopping: calls in flight finish within 30 s; open streams end now"  # each worker's
    assert ours == [f"listening on {server.base_url} (2 worker(s), store memory:)", stopping, stopping, "stopped"], log
    assert "leaked-secret-value" not in log
    assert "/healthz" not in log
    assert " DEBUG " not in log


def test_log_level_debug_shows_debug_lines(tmp_path: Path) -> None:
    with serving(tmp_path, "--store", "memory:", "--log-level", "debug") as server:
        pass

    assert " DEBUG " in server.log()


def test_migrate_serves_a_new_store_after_creating_its_schema(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/new.db"
    refused = run_serve(tmp_path, "--store", url)
    with serving(tmp_path, "--store", url, "--migrate") as server:
        health = httpx.get(f"{server.base_url}/healthz", timeout=10)

    _refused(refused, "migrate")
    assert health.text == "ok\n"
    assert f"migrated {url}" in server.log()
