"""`serve` raises its limit of open files to the hard limit, for itself and its workers, and says
in one line when even that is too few for its streams (server/open_files.py)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from tests.e2e.server import serving

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(shutil.which("prlimit") is None, reason="util-linux's prlimit is not installed"),
]


def open_files(pid: int) -> tuple[int, int]:
    """The soft and hard limits of open files of a process, as the kernel holds them."""
    limits = Path(f"/proc/{pid}/limits").read_text()
    found = re.search(r"^Max open files\s+(\d+)\s+(\d+)", limits, re.MULTILINE)
    assert found, limits
    return int(found[1]), int(found[2])


def children(pid: int) -> list[int]:
    return [
        int(child) for task in Path(f"/proc/{pid}/task").iterdir() for child in (task / "children").read_text().split()
    ]


def test_the_server_and_its_workers_raise_their_soft_limit_to_the_hard_one(tmp_path: Path) -> None:
    with serving(tmp_path, "--migrate", "--workers", "2", wrapper=["prlimit", "--nofile=256:8192"]) as server:
        workers = children(server.process.pid)

        assert open_files(server.process.pid) == (8192, 8192)
        assert len(workers) >= 2  # the workers, and multiprocessing's helper where it runs one
        assert [open_files(worker) for worker in workers] == [(8192, 8192)] * len(workers)
        assert "open files" not in server.log()


def test_a_hard_limit_below_the_streams_is_said_in_one_line(tmp_path: Path) -> None:
    with serving(tmp_path, "--migrate", wrapper=["prlimit", "--nofile=256:512"]) as server:
        assert open_files(server.process.pid) == (512, 512)
        lines = [line for line in server.log().splitlines() if "open files" in line]

    assert len(lines) == 1
    assert "may open 512 files, fewer than its 1100 streams need" in lines[0]
    assert "LimitNOFILE=" in lines[0]
