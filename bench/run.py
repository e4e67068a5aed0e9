"""`make bench`: load figures measured side by side, printed and written to docs/benchmarks.md.

Each setup (bench/plan.py) is a fresh server on 127.0.0.1 and a fresh store;
wrk drives it for a bounded time (a warm-up, then the measured run). These
machines are shared and noisy: the figures that matter are ratios of runs
made in this one invocation, and the targets are judged on those ratios.
"""

from __future__ import annotations

import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field, replace
from importlib import metadata
from pathlib import Path

from bench import importing, report, stalled, unread, watches10k, watching
from bench.load import CONNECTIONS, DURATION_S, THREADS, WARMUP_S, Figures, Load, ensure_wrk, wrk
from bench.other_commits import ROOT, pythonpath
from bench.pages import last_changes_since, last_page_token
from bench.plan import FRESH_ITEM_RPCS, ITEM_RATE, NAMED, PLAN, REVOKE_RATE, Setup
from bench.seed import MINT_POLICY_ENV, Tokens
from bench.servers import Cores, Running, machine_cpu_seconds, serving
from bench.stores import PEPPER_ENV, PostgresServer, sqlite_store

LISTED_VAULT = "v-0"  # the vault ListItems and ListChanges loads page through: the only one of their setups


@dataclass
class Served:
    """A setup's server, up, and what its loads need: token files and the next fresh item."""

    setup: Setup
    server: Running
    work: Path
    load_cores: frozenset[int] | None = None  # where wrk runs when the server is pinned
    next_item: int = 0
    next_revoked: int = 0  # the next line of revoke-ids no revoke load has used yet
    runs_made: int = 0  # wrk runs of CreateItem so far: each creates ids of its own
    runs: dict[Load, list[Figures]] = field(default_factory=dict)

    def call(self, load: Load, seconds: int, pace_ms: int = 0) -> Figures:
        pacing = [str(pace_ms), str(THREADS), str(CONNECTIONS)]
        vault_token, layout = str(self.work / "vault-token"), self.setup.layout
        if load.rpc in FRESH_ITEM_RPCS:
            per_thread = ITEM_RATE.get(self.setup.store, 1) // THREADS * seconds
            args = [load.rpc, vault_token, load.codec, *pacing]
            args += [str(self.next_item), str(per_thread), str(layout.vaults)]
            self.next_item += per_thread * THREADS
        elif load.rpc == "create":
            self.runs_made += 1
            args = ["create", vault_token, load.codec, *pacing, str(self.runs_made), str(layout.vaults)]
        elif load.rpc == "get":
            args = ["get", vault_token, load.codec, *pacing, str(layout.items), str(layout.vaults)]
        elif load.rpc in ("list-first", "list-last"):
            args = [load.rpc, vault_token, load.codec, *pacing, LISTED_VAULT, str(self.work / f"{load.rpc}-token")]
        elif load.rpc in ("changes-first", "changes-last"):
            since = (self.work / "changes-last-since").read_text().strip() if load.rpc == "changes-last" else "0"
            args = [load.rpc, vault_token, load.codec, *pacing, LISTED_VAULT, since]
        elif load.rpc == "list-tokens":
            args = ["list-tokens", vault_token, load.codec, *pacing]
        elif load.rpc == "revoke":
            per_thread = REVOKE_RATE.get(self.setup.store, 1) // THREADS * seconds
            args = ["revoke", vault_token, load.codec, *pacing, str(self.next_revoked), str(per_thread)]
            args.append(str(self.work / "revoke-ids"))
            self.next_revoked += per_thread * THREADS
        else:
            args = ["mint", str(self.work / "mint-tokens"), load.codec, *pacing]
        return _measured(self.server, args, seconds, self.load_cores)


def _measured(server: Running, args: list[str], seconds: int, load_cores: frozenset[int] | None) -> Figures:
    """One wrk run, with the CPU the server and the whole machine spent meanwhile, and what the
    hypervisor took: on a shared machine with two cores, that is what explains a ratio."""
    started, server_before, (busy_before, stolen_before) = time.monotonic(), server.cpu_seconds(), machine_cpu_seconds()
    figures = wrk(server.port, args, seconds, load_cores)
    wall = time.monotonic() - started
    busy_after, stolen_after = machine_cpu_seconds()
    return replace(
        figures,
        server_cores=(server.cpu_seconds() - server_before) / wall,
        machine_cores=(busy_after - busy_before) / wall,
        stolen_cores=(stolen_after - stolen_before) / wall,
    )


class Bench:
    def __init__(self, stack: ExitStack, tmp: Path) -> None:
        self._tmp = tmp
        self.postgres = PostgresServer(stack)
        self.figures: dict[tuple[str, Load], Figures] = {}
        self.peak_rss_mib: dict[str, float] = {}

    def run(self, group: tuple[Setup, ...]) -> None:
        """Serve the group's setups together; interleave their peak loads round by round (each
        round every load on every setup in turn), then run each paced load once, at half of
        its setup's peak."""
        started = time.monotonic()
        with ExitStack() as stack:
            served = [stack.enter_context(self._serve(setup)) for setup in group]
            peaks = list(dict.fromkeys(load for s in served for load in s.setup.loads if not load.half))
            for round_ in range(max(s.setup.rounds for s in served)):
                for load in peaks:
                    for s in served:
                        if load in s.setup.loads and round_ < s.setup.rounds:
                            if round_ == 0:
                                s.call(load, WARMUP_S)
                            s.runs.setdefault(load, []).append(s.call(load, DURATION_S))
            for s in served:
                for load, runs in s.runs.items():
                    self._record(s.setup, load, _median(runs))
                for load in (load for load in s.setup.loads if load.half):
                    peak = self.figures[(s.setup.key, Load(load.rpc, load.codec))].rps
                    pace_ms = max(1, round(CONNECTIONS * 1000 / (peak / 2)))
                    s.call(load, WARMUP_S, pace_ms)
                    self._record(s.setup, load, s.call(load, DURATION_S, pace_ms))
                self.peak_rss_mib[s.setup.key] = s.server.peak_rss_mib()
        keys = ", ".join(setup.key for setup in group)
        print(f"  {keys}: done in {time.monotonic() - started:.0f} s", file=sys.stderr)

    def _record(self, setup: Setup, load: Load, figures: Figures) -> None:
        self.figures[(setup.key, load)] = figures
        print(f"  {setup.key} {load}: {figures}", file=sys.stderr)

    @contextmanager
    def _serve(self, setup: Setup) -> Iterator[Served]:
        work = self._tmp / setup.key
        work.mkdir()
        with self._store(setup, work) as (store_url, tokens):
            env = {
                "PYTHONPATH": pythonpath(setup.code),  # that commit's code, or this tree's
                "ZKPLATFORM_STATE_DIR": str(work),
                **PEPPER_ENV,
                **MINT_POLICY_ENV,
                "BENCH_VAULT_SIZE": str(setup.layout.vault_size),
                "BENCH_ITEMS": str(setup.layout.items),
                "BENCH_MINTERS": str(setup.layout.minters),
                "BENCH_OWN_TOKENS": str(setup.layout.own_tokens),
                "BENCH_TOKEN_FILE": str(work / "tokens.json"),
            }
            if tokens is not None:
                tokens.write(work / "tokens.json")
            cores = Cores.split() if setup.pinned else None
            server_cores = None if cores is None else cores.server
            with serving(setup.command(store_url), env, work / "server.log", ROOT, server_cores) as server:
                if not setup.app.startswith("zkplatform"):
                    Tokens("none", ["none"]).write(work / "tokens.json")  # the baselines look at no token
                issued = Tokens.read(work / "tokens.json")
                _private(work / "vault-token", [issued.delete])  # the owner's: every scope
                _private(work / "mint-tokens", issued.mint)
                _private(work / "revoke-ids", issued.own)  # not secrets, but kept as the tokens are
                rpcs = {load.rpc for load in setup.loads}
                if "list-first" in rpcs:
                    (work / "list-first-token").write_text("\n")
                if "list-last" in rpcs:
                    last = last_page_token(server.port, issued.delete, LISTED_VAULT, setup.layout.vault_size)
                    (work / "list-last-token").write_text(last + "\n")
                if "changes-last" in rpcs:
                    since = last_changes_since(server.port, issued.delete, LISTED_VAULT)
                    (work / "changes-last-since").write_text(f"{since}\n")
                yield Served(setup, server, work, None if cores is None else cores.load)

    @contextmanager
    def _store(self, setup: Setup, work: Path) -> Iterator[tuple[str, Tokens | None]]:
        if setup.store == "sqlite":
            yield sqlite_store(work, setup.layout, setup.code)
        elif setup.store == "postgresql":
            with self.postgres.database(setup.layout, setup.code) as (url, tokens):
                yield url, tokens
        else:
            yield "memory:", None


def _private(path: Path, lines: Iterable[str]) -> None:
    """Lines for wrk to read, in a file only this user may read from the moment it exists."""
    with os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as out:
        out.writelines(f"{line}\n" for line in lines)


def _median(runs: list[Figures]) -> Figures:
    """The run with the median throughput (its latencies with it)."""
    middle = statistics.median_low(run.rps for run in runs)
    return next(run for run in runs if run.rps == middle)


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
    started = time.monotonic()
    # Some setups (by key) or named groups (bench/plan.py's NAMED) only, to run or try them alone.
    only = os.environ.get("BENCH_ONLY", "").split(",")
    named = [NAMED[name] for name in only if name in NAMED]
    chosen = [tuple(setup for setup in group if only == [""] or setup.key in only or group in named) for group in PLAN]
    chosen = [group for group in chosen if group]
    wrk_version = ensure_wrk() if chosen else "not run"  # the loads' only
    imported = None
    watches = None
    soaks = None
    with ExitStack() as stack, tempfile.TemporaryDirectory(prefix="zk-bench-") as tmp:
        bench = Bench(stack, Path(tmp))
        for group in chosen:
            bench.run(group)
        if only == [""] or "import" in only:  # alone on the machine: no server is running now
            imported = importing.measure(Path(tmp) / "import")
            print(f"  import: {imported}", file=sys.stderr)
        if only == [""] or "sync" in only:  # the watches, alone on the machine too
            watches = watching.measure(Path(tmp) / "watch", bench.postgres)
            print(f"  watch: {watches}", file=sys.stderr)
        if only == [""] or "stalled" in only:  # the soak of stalled watchers, alone on the machine too
            soaks = stalled.measure(Path(tmp) / "stalled", bench.postgres)
            print(f"  stalled: {soaks}", file=sys.stderr)
        if "unread" in only:  # unread one-shot answers, before and after issue 39: asked for by name only
            print(unread.table(unread.measure(Path(tmp) / "unread", bench.postgres)), file=sys.stderr)
        if "watches" in only:  # 10,000 watches a worker, before and after issue 42: asked for by name only
            runs = watches10k.measure(watches10k.SETUPS, Path(tmp) / "watches", bench.postgres)
            print(watches10k.table(runs), file=sys.stderr)
    text = report.render(
        report.Inputs(
            figures=bench.figures,
            peak_rss_mib=bench.peak_rss_mib,
            machine=machine(wrk_version),
            minutes=(time.monotonic() - started) / 60,
            imported=imported,
            watches=watches,
            stalled=soaks,
        )
    )
    print(text)
    Path(os.environ.get("BENCH_OUTPUT", ROOT / "docs" / "benchmarks.md")).write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
