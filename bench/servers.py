"""Servers under test: started on 127.0.0.1, awaited (bounded), measured, stopped."""

from __future__ import annotations

import http.client
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.e2e.server import free_port

START_TIMEOUT_S = 180  # seeding a million items in the server's memory takes a while
STOP_TIMEOUT_S = 15


@dataclass(frozen=True, slots=True)
class Cores:
    """A split of this process's cores: one for a single-process server, the rest for the load.
    Pinned so, the server never shares its core with wrk, and its calls per second follow its
    CPU cost per call (on two cores, unpinned runs moved with where the scheduler put wrk)."""

    server: frozenset[int]
    load: frozenset[int]

    @classmethod
    def split(cls) -> Cores | None:
        """None when there are fewer than two cores to split."""
        cores = sorted(os.sched_getaffinity(0))
        return cls(frozenset(cores[-1:]), frozenset(cores[:-1])) if len(cores) >= 2 else None


def pinned_to(cores: frozenset[int] | None) -> Callable[[], None] | None:
    """A preexec_fn that pins the child (and what it spawns) to those cores, or None for no pinning."""
    if cores is None:
        return None
    return lambda: os.sched_setaffinity(0, cores)


@dataclass(frozen=True, slots=True)
class Running:
    port: int
    pid: int

    def cpu_seconds(self) -> float:
        """CPU time used so far by the server's processes (user and system)."""
        return sum(_cpu_seconds(pid) for pid in [self.pid, *_descendants(self.pid)])

    def rss_kib(self) -> int:
        """The resident set of the server's processes now, summed (one worker: that worker's)."""
        return sum(_status_kib(pid, "VmRSS") for pid in [self.pid, *_descendants(self.pid)])

    def peak_rss_mib(self) -> float:
        """The largest peak resident set of the server's processes (its busiest worker)."""
        peaks = [_status_kib(pid, "VmHWM") for pid in [self.pid, *_descendants(self.pid)]]
        return max(peaks, default=0) / 1024


@contextmanager
def serving(
    command: list[str], env: dict[str, str], log: Path, cwd: Path, cores: frozenset[int] | None = None
) -> Iterator[Running]:
    port = free_port()
    command = [part.replace("{port}", str(port)) for part in command]
    with log.open("wb") as out:
        process = subprocess.Popen(  # the harness starts its servers from one thread
            command,
            env={**os.environ, **env},
            cwd=cwd,
            stdout=out,
            stderr=subprocess.STDOUT,
            preexec_fn=pinned_to(cores),  # noqa: PLW1509 # the harness starts its servers from one thread
        )
    try:
        _wait_until_answering(process, port, log)
        yield Running(port, process.pid)
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=STOP_TIMEOUT_S)


def _wait_until_answering(process: subprocess.Popen[bytes], port: int, log: Path) -> None:
    """Until any HTTP answer comes back: the port may be bound before a worker has loaded its app."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            msg = f"server exited with {process.returncode}:\n{log.read_text(errors='replace')[-3000:]}"
            raise RuntimeError(msg)
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
        try:
            connection.request("GET", "/healthz")
            connection.getresponse().read()
        except OSError:
            time.sleep(0.2)
        else:
            return
        finally:
            connection.close()
    msg = f"server did not answer within {START_TIMEOUT_S} s:\n{log.read_text(errors='replace')[-3000:]}"
    raise RuntimeError(msg)


def _descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, stack = [], [pid]
    while stack:
        for child in children.get(stack.pop(), []):
            found.append(child)
            stack.append(child)
    return found


_TICKS = os.sysconf("SC_CLK_TCK")


def _cpu_seconds(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / _TICKS  # utime, stime


def machine_cpu_seconds() -> tuple[float, float]:
    """(busy, stolen) CPU seconds of the whole machine since boot, summed over its cores. Stolen
    is time the hypervisor gave this virtual machine's cores to someone else."""
    jiffies = [int(n) for n in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle, stolen = jiffies[3] + jiffies[4], jiffies[7]  # idle + iowait; steal
    return (sum(jiffies) - idle - stolen) / _TICKS, stolen / _TICKS


def _status_kib(pid: int, field: str) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0
