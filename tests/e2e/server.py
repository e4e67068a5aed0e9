"""Run a real `zkplatform serve` on 127.0.0.1 for end-to-end tests."""

from __future__ import annotations

import itertools
import os
import signal
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from zkplatform_tlog.note import generate_signer_key

START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 10.0


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class Server:
    base_url: str
    log_path: Path
    process: subprocess.Popen[bytes]

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


def eventually(condition: Callable[[], bool], seconds: float = 20.0) -> bool:
    """Whether the condition comes to hold within `seconds` (bounded polling: what it waits on
    is another process, which tells nothing when it gets there)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return False


def zkplatform_command() -> str:
    """The console script of the environment running the tests."""
    script = Path(sys.executable).parent / "zkplatform"
    assert script.exists(), "the zkplatform console script is not installed (make install)"
    return str(script)


@contextmanager
def serving(
    tmp_path: Path,
    *args: str,
    env: dict[str, str] | None = None,
    tls: ssl.SSLContext | None = None,
    port: int | None = None,
    wrapper: Sequence[str] = (),
) -> Iterator[Server]:
    """Start the server, wait (bounded) until it says every worker listens, stop it afterwards.

    The server runs in a session of its own, so a test can signal its whole
    process group as a terminal's Ctrl-C does. With `tls` (the client's context,
    trusting the server's CA) the server is expected to serve https (give it
    --certfile and --keyfile). `port` serves on that port (a restart where
    clients expect the server) instead of a free one. `wrapper` runs the server
    (a sandbox that then executes it)."""
    port = port or free_port()
    log_path = tmp_path / f"server-{port}.log"
    for restart in itertools.count(2):  # a restart on the port keeps the log of the server before
        if not log_path.exists():
            break
        log_path = tmp_path / f"server-{port}-{restart}.log"
    command = [*wrapper, zkplatform_command(), "serve", "--bind", f"127.0.0.1:{port}", *args]
    env = {**log_key_env(tmp_path, args, env), **(env or {})}
    with log_path.open("wb") as log_file:
        process = subprocess.Popen(
            command,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            cwd=tmp_path,
            env={**os.environ, **(env or {})},
            start_new_session=True,
        )
    server = Server(f"{'https' if tls else 'http'}://127.0.0.1:{port}", log_path, process)
    try:
        _wait_until_listening(server, tls or True)
        yield server
    finally:
        stop(server)


def _wait_until_listening(server: Server, verify: ssl.SSLContext | bool = True) -> None:
    """The server logs "listening on URL" once every worker listens (a worker that
    answers /healthz says nothing of the others)."""
    announcement = f"listening on {server.base_url} "
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if announcement in server.log():
            assert httpx.get(f"{server.base_url}/healthz", timeout=10, verify=verify).status_code == 200
            return
        if server.process.poll() is not None:
            msg = f"server exited with {server.process.returncode}:\n{server.log()}"
            raise AssertionError(msg)
        time.sleep(0.05)
    msg = f"server did not say it listens within {START_TIMEOUT_S}s:\n{server.log()}"
    raise AssertionError(msg)


def run_serve(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`zkplatform serve ARGS` expected to refuse to start: its exit code and output."""
    env = {**log_key_env(tmp_path, args, env), **(env or {})}
    return subprocess.run(
        [zkplatform_command(), "serve", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=tmp_path,
        env={**os.environ, **(env or {})},
    )


def log_key_env(tmp_path: Path, args: Sequence[str], env: Mapping[str, str] | None) -> dict[str, str]:
    """A log key for a server on PostgreSQL, which starts only with one made on purpose: the same
    for every server a test starts in `tmp_path` (restarts sign the log with the key they did);
    none when the test sets ZKPLATFORM_LOG_KEY_FILES itself (to "" for none)."""
    given = {**os.environ, **(env or {})}
    postgres = ("postgresql:", "postgres:")
    store = next((arg for arg in args if arg.startswith(postgres)), given.get("ZKPLATFORM_STORE", ""))
    if not store.startswith(postgres) or "ZKPLATFORM_LOG_KEY_FILES" in given:
        return {}
    path = tmp_path / "log.key"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(generate_signer_key("zkplatform.test")[0] + "\n")
    return {"ZKPLATFORM_LOG_KEY_FILES": str(path)}


def stop(server: Server) -> None:
    """SIGTERM, then SIGKILL to the whole process group should it not stop in time."""
    if server.process.poll() is None:
        server.process.send_signal(signal.SIGTERM)
        try:
            server.process.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            os.killpg(server.process.pid, signal.SIGKILL)
            server.process.wait(timeout=STOP_TIMEOUT_S)
