"""The directory where several workers write their metrics (prometheus-client's multiprocess
mode) lasts as long as its server: a server killed with -9 cannot remove its own, so the next
one to start removes it, and never the directory of a server that still runs.

Each server here has the test's own temporary directory (TMPDIR), where its directory is made."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import httpx

from tests.e2e.server import eventually, free_port, serving
from tests.e2e.test_durable import ENV, seeded
from zkplatform.observability.metrics import DIRECTORY_PREFIX

WORKERS_GONE_S = 40.0  # the workers of a killed server stop on SIGTERM, within their grace period


def metrics_directories(temporary: Path) -> set[str]:
    return {path.name for path in temporary.iterdir() if path.name.startswith(DIRECTORY_PREFIX)}


def children(pid: int) -> set[int]:
    """The processes whose parent is `pid` (its workers, and multiprocessing's helper)."""
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue  # ended meanwhile
            if int(stat.rpartition(")")[2].split()[1]) == pid:
                found.add(int(entry.name))
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return False
    return state != "Z"


def served(url: str) -> tuple[str, ...]:
    return ("--store", url, "--workers", "2", "--metrics-bind", f"127.0.0.1:{free_port()}")


def scraped(args: tuple[str, ...]) -> int:
    metrics_bind = args[args.index("--metrics-bind") + 1]
    return httpx.get(f"http://{metrics_bind}/metrics", timeout=10).status_code


def test_the_directory_of_a_server_killed_with_9_is_removed_at_the_next_start(tmp_path: Path) -> None:
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    url = f"sqlite:///{tmp_path}/zk.db"
    seeded(url)
    env = {**ENV, "TMPDIR": str(temporary)}

    first_args = served(url)
    with serving(tmp_path, *first_args, env=env) as first:
        made = metrics_directories(temporary)
        workers = children(first.process.pid)
        first.process.send_signal(signal.SIGKILL)
        first.process.wait(timeout=10)
        # Its workers are told to stop by the kernel (PR_SET_PDEATHSIG), and do.
        stopped = eventually(lambda: not any(alive(pid) for pid in workers), WORKERS_GONE_S)
    left = metrics_directories(temporary)

    second_args = served(url)
    with serving(tmp_path, *second_args, env=env) as second:
        during = metrics_directories(temporary)
        answered = scraped(second_args)
    after = metrics_directories(temporary)

    assert len(made) == 1
    assert stopped
    assert left == made  # what the issue saw: the killed server's directory, for ever
    assert len(during) == 1
    assert during.isdisjoint(made)  # removed once the next server started; its own made
    assert answered == 200
    assert after == set()  # a server that stops removes its own
    assert "removed 1 metrics directory left by servers that ended without removing them" in second.log()


def test_a_running_server_keeps_its_directory_when_another_starts(tmp_path: Path) -> None:
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    url = f"sqlite:///{tmp_path}/zk.db"
    seeded(url)
    env = {**ENV, "TMPDIR": str(temporary)}
    # A directory of this user's that a server made before directories had an owner's lock:
    # old, so removed; and one of the same name that is no directory: left alone.
    (temporary / f"{DIRECTORY_PREFIX}old").mkdir()
    os.utime(temporary / f"{DIRECTORY_PREFIX}old", (1, 1))
    (temporary / f"{DIRECTORY_PREFIX}file").write_text("not a directory")

    first_args = served(url)
    with serving(tmp_path, *first_args, env=env):
        first_dirs = metrics_directories(temporary) - {f"{DIRECTORY_PREFIX}file"}
        second_args = served(url)
        with serving(tmp_path, *second_args, env=env):
            both = metrics_directories(temporary) - {f"{DIRECTORY_PREFIX}file"}
            answered = scraped(second_args)

    assert len(first_dirs) == 1
    assert f"{DIRECTORY_PREFIX}old" not in first_dirs
    assert first_dirs < both  # the first server's still there, beside the second's
    assert len(both) == 2
    assert answered == 200
    assert metrics_directories(temporary) == {f"{DIRECTORY_PREFIX}file"}
