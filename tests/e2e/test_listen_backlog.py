"""The listen backlog (ZKPLATFORM_LISTEN_BACKLOG, --backlog) reaches every worker's listening
socket: `ss` shows a listening socket's backlog as its Send-Q."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.e2e.server import run_serve, serving


def _backlogs(port: int) -> list[int]:
    """The backlog of each socket listening on 127.0.0.1:port."""
    listing = subprocess.run(
        ["ss", "-ltnH", f"sport = :{port}"], capture_output=True, text=True, check=True, timeout=10
    ).stdout
    return [int(line.split()[2]) for line in listing.splitlines()]  # State Recv-Q Send-Q ...


@pytest.mark.skipif(shutil.which("ss") is None, reason="needs ss (iproute2)")
def test_every_worker_listens_with_the_backlog_it_was_given(tmp_path: Path) -> None:
    somaxconn = int(Path("/proc/sys/net/core/somaxconn").read_text())
    backlog = min(137, somaxconn)  # the kernel caps it: below the cap, the value given shows
    env = {"ZKPLATFORM_LISTEN_BACKLOG": str(backlog)}
    with serving(tmp_path, "--store", "memory:", "--workers", "2", env=env) as server:
        port = int(server.base_url.rpartition(":")[2])
        assert _backlogs(port) == [backlog, backlog]
    (tmp_path / "flag").mkdir()
    with serving(tmp_path / "flag", "--store", "memory:", "--backlog", str(backlog - 1), env=env) as server:
        port = int(server.base_url.rpartition(":")[2])
        assert _backlogs(port) == [backlog - 1]  # the flag wins


def test_a_bad_backlog_is_one_line_naming_it(tmp_path: Path) -> None:
    result = run_serve(tmp_path, env={"ZKPLATFORM_LISTEN_BACKLOG": "0"})
    assert result.returncode == 2
    assert result.stderr == "zkplatform: ZKPLATFORM_LISTEN_BACKLOG must be a whole number from 1 to 65535, not '0'\n"
