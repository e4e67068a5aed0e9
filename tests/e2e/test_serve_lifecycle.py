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

from tests.e2e.server import STOP_TIMEOUT_S, eventually, free_port, run_serve, serving, zkplatform_command

# Our own lines: an ISO 8601 time with its UTC offset, the pid, the level, the logger.
WAIT_S = 20.0  # the most the server may take to react to a signal, on a busy machine
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
    stopping = "stopping: 0 call(s) in flight finish within 30 s; 0 open stream(s) end now"  # each worker's
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


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_hangup_is_ignored_and_said_so(tmp_path: Path, workers: str) -> None:
    """A terminal's hangup reaches the whole process group: the server goes on serving."""
    with serving(tmp_path, "--store", "memory:", "--workers", workers) as server:
        os.killpg(server.process.pid, signal.SIGHUP)
        said = eventually(lambda: "SIGHUP ignored" in server.log())
        answer = httpx.get(f"{server.base_url}/healthz", timeout=STOP_TIMEOUT_S)
        alive = server.process.poll() is None
        server.process.send_signal(signal.SIGTERM)
        code = server.process.wait(timeout=STOP_TIMEOUT_S)
        log = server.log()

    assert said, log
    assert answer.status_code == 200
    assert alive
    assert code == 0, log
    assert log.splitlines()[-1].endswith("INFO zkplatform: stopped"), log


def test_workers_end_with_their_parent_and_the_port_is_free_again(tmp_path: Path) -> None:
    """kill -9 of the parent of `--workers 2`: its workers stop too (no orphans serving
    beside a new server on the port), and a new server then starts on the port."""
    port = free_port()
    with serving(tmp_path, "--store", "memory:", "--workers", "2", port=port) as server:
        workers = _children(server.process.pid)
        server.process.kill()
        server.process.wait(timeout=STOP_TIMEOUT_S)
        gone = eventually(lambda: not any(_alive(pid) for pid in workers))

    assert len(workers) == 2
    assert gone, [pid for pid in workers if _alive(pid)]
    with serving(tmp_path, "--store", "memory:", "--workers", "2", port=port) as again:
        assert httpx.get(f"{again.base_url}/healthz", timeout=STOP_TIMEOUT_S).status_code == 200


def _children(parent: int) -> list[int]:
    """The worker processes whose parent is `parent` (from /proc; multiprocessing also
    starts a resource tracker, which is not one)."""
    children = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
            command = (stat.parent / "cmdline").read_bytes()
        except OSError:
            continue  # it ended meanwhile
        if int(fields[1]) == parent and b"spawn_main" in command:
            children.append(int(stat.parent.name))
    return children


def _alive(pid: int) -> bool:
    """Running, not a zombie waiting for whichever process adopted it to reap it."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_serve_flags_come_from_the_environment_and_a_flag_wins(tmp_path: Path) -> None:
    env = {"ZKPLATFORM_WORKERS": "2", "ZKPLATFORM_LOG_FORMAT": "json", "ZKPLATFORM_GRACEFUL_TIMEOUT": "7"}
    (tmp_path / "env").mkdir()
    (tmp_path / "flag").mkdir()
    with serving(tmp_path / "env", "--store", "memory:", env=env) as server:
        pass
    from_env = server.log()  # the stopping line too
    with serving(tmp_path / "flag", "--store", "memory:", "--log-format", "text", env=env) as server:
        flag_wins = server.log()

    assert '"message": "listening on' in from_env, from_env
    assert "(2 worker(s)" in from_env
    assert "call(s) in flight finish within 7 s" in from_env
    assert "INFO zkplatform: listening on" in flag_wins, flag_wins


def test_a_bad_serve_variable_is_one_line_naming_it(tmp_path: Path) -> None:
    _refused(
        run_serve(tmp_path, env={"ZKPLATFORM_WORKERS": "many"}), "ZKPLATFORM_WORKERS must be a positive whole number"
    )


@pytest.mark.postgres
def test_postgresql_serves_only_with_a_log_key_made_on_purpose(tmp_path: Path, postgres_url: str) -> None:
    refused = run_serve(tmp_path, "--store", postgres_url, "--migrate", env={"ZKPLATFORM_LOG_KEY_FILES": ""})
    made = subprocess.run(
        [zkplatform_command(), "log-key", "generate", "--name", "log.example.com", "--out", str(tmp_path / "made.key")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert made.returncode == 0, made.stderr
    with serving(
        tmp_path, "--store", postgres_url, "--migrate", "--log-key-files", str(tmp_path / "made.key")
    ) as server:
        health = httpx.get(f"{server.base_url}/healthz", timeout=10)

    _refused(refused, "no log key: the key log of a PostgreSQL store is signed with a key made on purpose")
    assert "zkplatform log-key generate --name NAME --out FILE" in refused.stderr
    assert made.stdout.startswith("log.example.com+")
    assert health.text == "ok\n"
    assert "PRIVATE+KEY" not in server.log()


def test_a_sqlite_store_gets_a_log_key_at_its_first_start(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/zk.db"
    with serving(tmp_path, "--store", url, "--migrate") as first:
        pass
    with serving(tmp_path, "--store", url) as again:
        pass

    key, verifier = tmp_path / "zk.db.log-key", tmp_path / "zk.db.log-key.pub"
    assert (
        f"log key zkplatform.local made in {key}; its verifier key, which clients pin, is in {verifier}" in first.log()
    )
    assert f"log key zkplatform.local kept in {key}" in again.log()
    assert key.stat().st_mode & 0o777 == 0o600
    assert verifier.read_text().startswith("zkplatform.local+")
    assert "PRIVATE+KEY" not in first.log() + again.log()
