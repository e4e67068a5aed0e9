"""The load generator: wrk (Debian's), bounded in time, parsed into figures."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from bench.servers import pinned_to

BENCH = Path(__file__).resolve().parent
THREADS = 2
CONNECTIONS = 50
WARMUP_S = 2
DURATION_S = int(os.environ.get("BENCH_DURATION_S", "6"))  # shorter only to try the harness out


@dataclass(frozen=True, slots=True)
class Load:
    # A call of bench/calls.lua: "delete", "mint", "create", "update", "get", "list-first|last",
    # "changes-first|last", "list-tokens" or "revoke".
    rpc: str
    codec: str  # "json" or "proto"
    half: bool = False  # paced at half of the setup's peak for the same rpc and codec


@dataclass(frozen=True, slots=True)
class Figures:
    rps: float
    p50_ms: float
    p99_ms: float
    errors: int  # non-2xx answers and socket errors: a run with errors measured something else
    server_cores: float = 0.0  # CPU the server's processes used during the run, in cores
    machine_cores: float = 0.0  # CPU the whole machine used (server, wrk, database), in cores
    stolen_cores: float = 0.0  # CPU the hypervisor took from this machine meanwhile, in cores


def ensure_wrk() -> str:
    """wrk's path, installing Debian's package when it is missing (these machines run as root)."""
    if shutil.which("wrk") is None:
        subprocess.run(["apt-get", "install", "-y", "-q", "wrk"], check=False, capture_output=True)
    if shutil.which("wrk") is None:
        subprocess.run(["apt-get", "update", "-q"], check=True, capture_output=True)
        subprocess.run(["apt-get", "install", "-y", "-q", "wrk"], check=True, capture_output=True)
    return subprocess.run(["wrk", "--version"], capture_output=True, text=True, check=False).stdout.split()[1]


def wrk(port: int, args: list[str], seconds: int, cores: frozenset[int] | None = None) -> Figures:
    """Drive the server with bench/calls.lua (its arguments say which calls) for `seconds`,
    on those cores when given (bench/servers.py: Cores)."""
    command = [
        "wrk", f"-t{THREADS}", f"-c{CONNECTIONS}", f"-d{seconds}s", "--latency", "--timeout", "10s",
        "-s", str(BENCH / "calls.lua"), f"http://127.0.0.1:{port}", "--", *args,
    ]  # fmt: skip
    output = subprocess.run(  # run from the harness's one thread
        command, capture_output=True, text=True, check=True, timeout=seconds + 60, preexec_fn=pinned_to(cores)
    ).stdout
    return parse(output)


def _ms(text: str) -> float:
    match = re.fullmatch(r"([\d.]+)(us|ms|s|m)", text)
    if match is None:
        msg = f"unexpected wrk latency {text!r}"
        raise ValueError(msg)
    number, unit = match.groups()
    return float(number) * {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60_000.0}[unit]


def _search(pattern: str, output: str) -> str:
    match = re.search(pattern, output)
    if match is None:
        msg = f"wrk printed no {pattern!r}:\n{output}"
        raise ValueError(msg)
    return match.group(1)


def parse(output: str) -> Figures:
    errors = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", output)
    socket_errors = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", output)
    return Figures(
        rps=float(_search(r"Requests/sec:\s+([\d.]+)", output)),
        p50_ms=_ms(_search(r"\s50%\s+(\S+)", output)),
        p99_ms=_ms(_search(r"\s99%\s+(\S+)", output)),
        errors=(int(errors.group(1)) if errors else 0)
        + (sum(int(n) for n in socket_errors.groups()) if socket_errors else 0),
    )
