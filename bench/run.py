"""`make bench`: load figures measured side by side, printed and written to docs/benchmarks.md.

Each configuration gets a fresh server on 127.0.0.1 (hypercorn, one worker,
the same settings for all) and a real load generator (wrk) for a bounded time.
These machines are shared and noisy: the figures that matter are the ratios
of runs made in the same invocation.
"""

from __future__ import annotations

import os
import platform
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONNECTIONS = 50
THREADS = 2
WARMUP_S = 2
DURATION_S = 10
WARMUP_ITEMS_PER_THREAD = 20_000
ITEMS_PER_THREAD = 80_000
ITEMS = THREADS * (WARMUP_ITEMS_PER_THREAD + ITEMS_PER_THREAD)
TARGET_OVER_NOOP = 0.85

APPS = {
    "raw ASGI": "bench.apps:raw_app",
    "no-op Connect": "bench.apps:noop_app()",
    "zkplatform (memory)": "bench.apps:platform_app()",
}


@dataclass(frozen=True)
class Result:
    app: str
    codec: str
    rps: float
    p50_ms: float
    p99_ms: float
    errors: int


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def serving(app_path: str, token_file: Path) -> Iterator[int]:
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "BENCH_TOKEN_FILE": str(token_file), "BENCH_ITEMS": str(ITEMS)}
    command = [sys.executable, "-m", "hypercorn", "--bind", f"127.0.0.1:{port}", "--workers", "1", app_path]
    process = subprocess.Popen(command, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if process.poll() is not None:
                    raise RuntimeError(process.stderr.read().decode() if process.stderr else "server died") from None
                time.sleep(0.1)
        else:
            raise RuntimeError(f"{app_path} did not start within 60 s")
        yield port
    finally:
        process.terminate()
        process.wait(timeout=10)


@dataclass(frozen=True)
class Load:
    """One wrk run: which items it deletes (first, then per_thread for each thread) and for how long."""

    first: int
    per_thread: int
    seconds: int


def wrk(port: int, token: str, codec: str, load: Load) -> str:
    command = [
        "wrk", f"-t{THREADS}", f"-c{CONNECTIONS}", f"-d{load.seconds}s", "--latency",
        "-s", str(ROOT / "bench" / "delete.lua"), f"http://127.0.0.1:{port}",
        "--", token, codec, str(load.first), str(load.per_thread),
    ]  # fmt: skip
    return subprocess.run(command, capture_output=True, text=True, check=True, timeout=load.seconds + 30).stdout


def _ms(text: str) -> float:
    number, unit = re.fullmatch(r"([\d.]+)(us|ms|s)", text).groups()  # type: ignore[union-attr]
    return float(number) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]


def parse(app: str, codec: str, output: str) -> Result:
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", output).group(1))  # type: ignore[union-attr]
    p50 = _ms(re.search(r"\s50%\s+(\S+)", output).group(1))  # type: ignore[union-attr]
    p99 = _ms(re.search(r"\s99%\s+(\S+)", output).group(1))  # type: ignore[union-attr]
    errors = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", output)
    return Result(app, codec, rps, p50, p99, int(errors.group(1)) if errors else 0)


def measure(app: str, app_path: str, codec: str) -> Result:
    with tempfile.TemporaryDirectory() as tmp:
        token_file = Path(tmp) / "token"
        token_file.write_text("none")  # the baselines ignore it
        with serving(app_path, token_file) as port:
            token = token_file.read_text()
            wrk(port, token, codec, Load(0, WARMUP_ITEMS_PER_THREAD, WARMUP_S))
            output = wrk(port, token, codec, Load(THREADS * WARMUP_ITEMS_PER_THREAD, ITEMS_PER_THREAD, DURATION_S))
    return parse(app, codec, output)


def report(results: list[Result], command: str) -> str:
    by = {(r.app, r.codec): r for r in results}
    lines = [
        "| app | codec | requests/s | p50 ms | p99 ms | non-2xx |",
        "|---|---|---:|---:|---:|---:|",
        *(f"| {r.app} | {r.codec} | {r.rps:,.0f} | {r.p50_ms:.2f} | {r.p99_ms:.2f} | {r.errors} |" for r in results),
        "",
        "| ratio (same run) | json | proto |",
        "|---|---:|---:|",
    ]
    names = list(APPS)
    for top, bottom in ((names[2], names[1]), (names[1], names[0]), (names[2], names[0])):
        cells = [f"{by[(top, c)].rps / by[(bottom, c)].rps:.2f}x" for c in ("json", "proto")]
        lines.append(f"| {top} / {bottom} | {cells[0]} | {cells[1]} |")
    lines += ["", "| target | json | proto |", "|---|---|---|"]
    cells = []
    for codec in ("json", "proto"):
        ratio = by[(names[2], codec)].rps / by[(names[1], codec)].rps
        cells.append(f"{'met' if ratio >= TARGET_OVER_NOOP else 'NOT met'} ({ratio:.2f}x)")
    lines.append(f"| DeleteItem >= {TARGET_OVER_NOOP}x the no-op Connect handler | {cells[0]} | {cells[1]} |")
    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if "model name" in line
        ),
        platform.processor(),
    )
    versions = ", ".join(f"{p} {metadata.version(p)}" for p in ("hypercorn", "connectrpc", "protobuf"))
    wrk_version = subprocess.run(["wrk", "--version"], capture_output=True, text=True, check=False).stdout.split()[1]
    header = [
        "# Benchmarks",
        "",
        f"Machine: {os.cpu_count()} cores, {cpu}; Python {platform.python_version()}; {versions}; wrk {wrk_version}.",
        (
            f"Load: wrk, {THREADS} threads, {CONNECTIONS} connections, {WARMUP_S} s warm-up then {DURATION_S} s"
            " measured, a fresh item per DeleteItem; one hypercorn worker, fresh server per row."
        ),
        f"Command: `{command}`",
        "",
    ]
    return "\n".join([*header, *lines, ""])


def main() -> int:
    if shutil.which("wrk") is None:  # Debian's wrk; this needs root, as on these machines
        subprocess.run(["apt-get", "update", "-q"], check=True)
        subprocess.run(["apt-get", "install", "-y", "-q", "wrk"], check=True)
    results = [measure(app, path, codec) for codec in ("json", "proto") for app, path in APPS.items()]
    text = report(results, "make bench")
    print(text)
    (ROOT / "docs" / "benchmarks.md").write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
