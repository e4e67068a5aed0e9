"""`make bench`: load figures measured side by side, printed and written to docs/benchmarks.md.

Each setup is a fresh server on 127.0.0.1 and a fresh store; wrk drives it for
a bounded time (a warm-up, then the measured run). These machines are shared
and noisy: the figures that matter are ratios of runs made in this one
invocation, and the targets are judged on those ratios.
"""

from __future__ import annotations

import os
import platform
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, replace
from importlib import metadata
from pathlib import Path

from bench import report
from bench.load import CONNECTIONS, DURATION_S, THREADS, WARMUP_S, Figures, Load, ensure_wrk, wrk
from bench.seed import MINT_POLICY_ENV, Layout, Tokens
from bench.servers import Running, machine_busy_seconds, serving
from bench.stores import PEPPER_ENV, PostgresServer, sqlite_store

ROOT = Path(__file__).resolve().parent.parent
THOUSAND, MILLION = 1_000, 1_000_000
# Items a delete load may use per second, by store: more than any server here reaches, so
# every call finds a fresh item (a run that ran out would show not_found errors).
ITEM_RATE = {"memory": 14_000, "sqlite": 5_000, "postgresql": 5_000}


@dataclass(frozen=True, slots=True)
class Setup:
    key: str
    server: str  # "hypercorn" or "uvicorn"
    app: str  # "raw", "noop" or "zkplatform"
    store: str  # "", "memory", "sqlite" or "postgresql"
    workers: int
    vault_size: int
    loads: tuple[Load, ...]

    @property
    def layout(self) -> Layout:
        seconds = WARMUP_S + DURATION_S
        deletes = sum(1 for load in self.loads if load.rpc == "delete")
        items = max(self.vault_size, deletes * seconds * ITEM_RATE.get(self.store, 0))
        return Layout(vault_size=self.vault_size, items=items)


PEAK_JSON_PROTO = (Load("delete", "json"), Load("delete", "proto"), Load("mint", "json"), Load("mint", "proto"))
DURABLE = (Load("delete", "json"), Load("delete", "proto"), Load("mint", "json"))
PLAN = (
    Setup("raw", "hypercorn", "raw", "", 1, THOUSAND, (Load("delete", "json"), Load("delete", "proto"))),
    Setup("noop", "hypercorn", "noop", "", 1, THOUSAND, PEAK_JSON_PROTO),
    Setup(
        "memory",
        "hypercorn",
        "zkplatform",
        "memory",
        1,
        THOUSAND,
        (*PEAK_JSON_PROTO, Load("delete", "json", half=True), Load("delete", "proto", half=True)),
    ),
    Setup("memory-1m", "hypercorn", "zkplatform", "memory", 1, MILLION, (Load("delete", "json"),)),
    Setup("uvicorn", "uvicorn", "zkplatform", "memory", 1, THOUSAND, (Load("delete", "json"), Load("delete", "proto"))),
    Setup("sqlite", "hypercorn", "zkplatform", "sqlite", 1, THOUSAND, (*DURABLE, Load("delete", "json", half=True))),
    Setup("sqlite-2w", "hypercorn", "zkplatform", "sqlite", 2, THOUSAND, DURABLE),
    Setup("sqlite-1m", "hypercorn", "zkplatform", "sqlite", 1, MILLION, (Load("delete", "json"),)),
    Setup(
        "postgresql",
        "hypercorn",
        "zkplatform",
        "postgresql",
        1,
        THOUSAND,
        (*DURABLE, Load("delete", "json", half=True)),
    ),
    Setup("postgresql-2w", "hypercorn", "zkplatform", "postgresql", 2, THOUSAND, DURABLE),
)
BENCH_APPS = {"raw": "bench.apps:raw_app", "noop": "bench.apps:noop_app()", "zkplatform": "bench.apps:platform_app()"}


def command(setup: Setup, store_url: str) -> list[str]:
    if setup.server == "uvicorn":
        return [
            sys.executable, "-m", "uvicorn", "--factory", "bench.apps:platform_app", "--host", "127.0.0.1",
            "--port", "{port}", "--workers", str(setup.workers), "--no-access-log", "--log-level", "warning",
        ]  # fmt: skip
    if setup.store in ("sqlite", "postgresql"):  # the real command line, as operators run it
        zkplatform = str(Path(sys.executable).parent / "zkplatform")
        return [
            zkplatform,
            "serve",
            "--bind",
            "127.0.0.1:{port}",
            "--store",
            store_url,
            "--workers",
            str(setup.workers),
        ]
    return [
        sys.executable, "-m", "hypercorn", "--bind", "127.0.0.1:{port}", "--workers", str(setup.workers),
        BENCH_APPS[setup.app],
    ]  # fmt: skip


class Bench:
    def __init__(self, stack: ExitStack, tmp: Path) -> None:
        self._tmp = tmp
        self._postgres = PostgresServer(stack)
        self.figures: dict[tuple[str, Load], Figures] = {}
        self.peak_rss_mib: dict[str, float] = {}

    def run(self, setup: Setup) -> None:
        started = time.monotonic()
        work = self._tmp / setup.key
        work.mkdir()
        with self._store(setup, work) as (store_url, tokens):
            env = {
                # BENCH_SERVER_PATH: another checkout's src and gen, to measure its code with this harness.
                "PYTHONPATH": os.pathsep.join(filter(None, [os.environ.get("BENCH_SERVER_PATH"), str(ROOT)])),
                "ZKPLATFORM_STATE_DIR": str(work),
                **PEPPER_ENV,
                **MINT_POLICY_ENV,
                "BENCH_VAULT_SIZE": str(setup.layout.vault_size),
                "BENCH_ITEMS": str(setup.layout.items),
                "BENCH_MINTERS": str(setup.layout.minters),
                "BENCH_TOKEN_FILE": str(work / "tokens.json"),
            }
            if tokens is not None:
                tokens.write(work / "tokens.json")
            with serving(command(setup, store_url), env, work / "server.log", ROOT) as server:
                if setup.app != "zkplatform":
                    Tokens("none", ["none"]).write(work / "tokens.json")  # the baselines look at no token
                self._loads(setup, server, Tokens.read(work / "tokens.json"), work)
                self.peak_rss_mib[setup.key] = server.peak_rss_mib()
        print(f"  {setup.key}: done in {time.monotonic() - started:.0f} s", file=sys.stderr)

    @contextmanager
    def _store(self, setup: Setup, work: Path) -> Iterator[tuple[str, Tokens | None]]:
        if setup.store == "sqlite":
            yield sqlite_store(work, setup.layout)
        elif setup.store == "postgresql":
            with self._postgres.database(setup.layout) as (url, tokens):
                yield url, tokens
        else:
            yield "memory:", None

    def _loads(self, setup: Setup, server: Running, tokens: Tokens, work: Path) -> None:
        (work / "delete-token").write_text(tokens.delete + "\n")
        (work / "mint-tokens").write_text("".join(f"{token}\n" for token in tokens.mint))
        next_item = 0
        per_second = ITEM_RATE.get(setup.store, 1) // THREADS
        for load in setup.loads:
            pace_ms = 0
            if load.half:
                peak = self.figures[(setup.key, Load(load.rpc, load.codec))].rps
                pace_ms = max(1, round(CONNECTIONS * 1000 / (peak / 2)))
            figures = None
            for seconds in (WARMUP_S, DURATION_S):
                if load.rpc == "delete":
                    per_thread = per_second * seconds
                    args = ["delete", str(work / "delete-token"), load.codec, str(pace_ms)]
                    args += [str(next_item), str(per_thread), str(setup.layout.vaults)]
                    next_item += per_thread * THREADS
                else:
                    args = ["mint", str(work / "mint-tokens"), load.codec, str(pace_ms)]
                figures = self._measured(server, args, seconds)
            assert figures is not None
            self.figures[(setup.key, load)] = figures
            print(f"  {setup.key} {load}: {figures}", file=sys.stderr)

    @staticmethod
    def _measured(server: Running, args: list[str], seconds: int) -> Figures:
        """One wrk run, with the CPU the server and the whole machine spent meanwhile: on a shared
        machine with two cores, whether there was CPU left is what explains a ratio."""
        started, server_before, busy_before = time.monotonic(), server.cpu_seconds(), machine_busy_seconds()
        figures = wrk(server.port, args, seconds)
        wall = time.monotonic() - started
        return replace(
            figures,
            server_cores=(server.cpu_seconds() - server_before) / wall,
            machine_cores=(machine_busy_seconds() - busy_before) / wall,
        )


def machine(wrk_version: str) -> str:
    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.processor(),
    )
    packages = ("hypercorn", "uvicorn", "uvloop", "httptools", "connectrpc", "protobuf", "psycopg")
    versions = ", ".join(f"{name} {metadata.version(name)}" for name in packages)
    cores = len(os.sched_getaffinity(0))
    return f"{cpu} ({cores} cores); Python {platform.python_version()}; {versions}; wrk {wrk_version}"


def main() -> int:
    wrk_version = ensure_wrk()
    started = time.monotonic()
    with ExitStack() as stack, tempfile.TemporaryDirectory(prefix="zk-bench-") as tmp:
        bench = Bench(stack, Path(tmp))
        only = os.environ.get("BENCH_ONLY", "").split(",")  # a subset of the setups, to try the harness out
        for setup in PLAN:
            if only == [""] or setup.key in only:
                bench.run(setup)
    text = report.render(
        report.Inputs(
            figures=bench.figures,
            peak_rss_mib=bench.peak_rss_mib,
            machine=machine(wrk_version),
            minutes=(time.monotonic() - started) / 60,
        )
    )
    print(text)
    Path(os.environ.get("BENCH_OUTPUT", ROOT / "docs" / "benchmarks.md")).write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
