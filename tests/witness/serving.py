"""Run a real `zkplatform witness serve` on 127.0.0.1, or its keygen, for the tests."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.e2e.server import START_TIMEOUT_S, STOP_TIMEOUT_S, free_port, zkplatform_command

WITNESS_NAME = "witness.example.test/w1"


def witness(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`zkplatform witness ARGS` run to its end: its exit code and output."""
    return subprocess.run(
        [zkplatform_command(), "witness", *args], capture_output=True, text=True, timeout=60, check=False, cwd=cwd
    )


def keygen(tmp_path: Path, name: str = WITNESS_NAME) -> tuple[Path, str]:
    """A new witness key: its private key file and its vkey."""
    key = tmp_path / f"witness-{len(list(tmp_path.glob('witness-*.key')))}.key"
    done = witness("keygen", "--name", name, "--out", str(key), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return key, done.stdout.strip()


@dataclass
class Witness:
    url: str
    process: subprocess.Popen[bytes]
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


@contextmanager
def serving(tmp_path: Path, key: Path, state: Path, *log_keys: str, port: int | None = None) -> Iterator[Witness]:
    """The witness, once it says it listens; stopped (SIGTERM) afterwards."""
    port = port or free_port()
    log_path = tmp_path / f"witness-{port}-{time.monotonic_ns()}.log"
    arguments = ["--key", str(key), "--state", str(state), "--bind", f"127.0.0.1:{port}"]
    for vkey in log_keys:
        arguments += ["--log-key", vkey]
    with log_path.open("wb") as log_file:
        process = subprocess.Popen(
            [zkplatform_command(), "witness", "serve", *arguments],
            stdout=log_file,
            stderr=subprocess.STDOUT,
            cwd=tmp_path,
            start_new_session=True,
        )
    served = Witness(f"http://127.0.0.1:{port}", process, log_path)
    try:
        _wait_until_listening(served)
        yield served
    finally:
        stop(served)


def _wait_until_listening(served: Witness) -> None:
    announcement = f"listening on {served.url} "
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if announcement in served.log():
            return
        if served.process.poll() is not None:
            msg = f"the witness exited with {served.process.returncode}:\n{served.log()}"
            raise AssertionError(msg)
        time.sleep(0.05)
    msg = f"the witness did not say it listens within {START_TIMEOUT_S}s:\n{served.log()}"
    raise AssertionError(msg)


def stop(served: Witness) -> int:
    """SIGTERM, then SIGKILL to its process group should it not stop in time; its exit code."""
    if served.process.poll() is None:
        served.process.send_signal(signal.SIGTERM)
        try:
            served.process.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            os.killpg(served.process.pid, signal.SIGKILL)
            served.process.wait(timeout=STOP_TIMEOUT_S)
    return served.process.returncode
