"""Ten thousand watches per worker (issue 42): what they cost the server, idle and on a change.

    python -m bench.watches10k [--only KEY,...] [--scale 0.05] [--rounds 1] [--before COMMIT] [--keep DIR]
    BENCH_ONLY=watches make bench

Each setup is the real `zkplatform serve`, its watch limits raised to the setup's watches
(ZKPLATFORM_MAX_STREAMS, ZKPLATFORM_WATCH_MAX_PER_WORKER, ZKPLATFORM_WATCH_MAX_PER_PRINCIPAL),
served once with the code before the issue (BEFORE, checked out under build/) and once with
the working tree's, alternating, in one sitting:

- memory-h1: the memory store (`serve --dev`), one worker, one HTTP/1.1 Connect watch a connection;
- memory-h2-connect, memory-h2-grpc: the same over HTTP/2, 100 watches a connection (hypercorn's most);
- postgresql-h1: PostgreSQL (seeded as bench/seed.py does), two workers, twice the watches;
- noop-h1: the floor, as memory-h1 but served by bench/noop_watches.py (hypercorn and connectrpc
  doing none of a watch's work), once, not beside another commit.

Every watch is of one vault, of one principal, from the vault's latest sequence (its first
message is the caught-up marker). The watchers are bench/watchers.py, processes of their own
(a one-worker server is pinned to a core, they to the others), opening in bursts of 200.

Printed per run: watches opened; connects or streams reset (tried again) and watches refused
(by code); the server's resident set (its processes' VmRSS, summed) grown per open watch;
its CPU over IDLE_S (two heartbeat periods and a bit, heartbeats included), in % of one core;
then CHANGES UpdateItems, FANOUT_GAP_S apart, each one change every watcher must receive:
from the writer's answer to each watcher's receipt, p50/p99/max over all, and receipts missing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO, Any

from google.protobuf.message import Message

from bench.other_commits import ROOT, pythonpath
from bench.seed import Layout
from bench.servers import Cores, Running, pinned_to, serving
from bench.stores import PEPPER_ENV, PostgresServer
from bench.wire import Connection
from zkplatform_api.platform.v1 import vault_pb2
from zkplatform_tlog.note import generate_signer_key

BEFORE = "aa97568"  # main when issue 42 was filed
HEARTBEAT_S = 15  # the default heartbeat period, which the servers keep
IDLE_S = 2 * HEARTBEAT_S + 2
CHANGES = 3
FANOUT_GAP_S = 5.0  # between changes: each one's fan-out is measured alone
COLLECT_TIMEOUT_S = 60.0
OPEN_TIMEOUT_S = 900
CREDENTIALS_TIMEOUT_S = 30
LAYOUT = Layout(vault_size=1000, items=1000, minters=1)


@dataclass(frozen=True, slots=True)
class WatchSetup:
    key: str
    store: str  # "memory", "postgresql" or "noop"
    workers: int
    watches: int
    protocol: str  # bench/watchers.py's: "http1", "connect-h2", "grpc-h2"
    watcher_processes: int  # each holds watches / watcher_processes streams


SETUPS = (
    WatchSetup("memory-h1", "memory", 1, 10_000, "http1", 1),
    WatchSetup("memory-h2-connect", "memory", 1, 10_000, "connect-h2", 1),
    WatchSetup("memory-h2-grpc", "memory", 1, 10_000, "grpc-h2", 1),
    WatchSetup("postgresql-h1", "postgresql", 2, 20_000, "http1", 2),
    WatchSetup("noop-h1", "noop", 1, 10_000, "http1", 1),
)
NOOP = "no-op handler"  # the code column of the floor's rows


@dataclass(frozen=True, slots=True)
class Run:
    setup: str
    code: str
    opened: int
    resets: int
    refused: dict[str, int]
    open_s: float
    kib_per_watch: float
    kib_per_watch_after_idle: float
    idle_core_pct: float
    p50_ms: float
    p99_ms: float
    max_ms: float
    missing: int
    load_average: float
    failed: str = ""  # why the run stopped before its figures: they are then zero

    def row(self) -> str:
        if self.failed:
            code = self.code or "this tree"
            return f"| {self.setup} | {code} | failed: {self.failed} |||||||| {self.load_average:.2f} |"
        refused = ",".join(f"{code} {n}" for code, n in sorted(self.refused.items())) or "0"
        return (
            f"| {self.setup} | {self.code or 'this tree'} | {self.opened:,} | {self.resets} | {refused} "
            f"| {self.open_s:.0f} | {self.kib_per_watch:.1f} ({self.kib_per_watch_after_idle:.1f}) "
            f"| {self.idle_core_pct:.1f} | {self.p50_ms:,.0f} / {self.p99_ms:,.0f} / {self.max_ms:,.0f} "
            f"| {self.missing} | {self.load_average:.2f} |"
        )


HEADER = (
    "| setup | code | opened | resets | refused | open s | KiB/watch (after idle) | idle % core "
    "| fan-out p50 / p99 / max ms | missing | load |\n|---|---|---|---|---|---|---|---|---|---|---|"
)


def measure(
    setups: tuple[WatchSetup, ...], work: Path, postgres: PostgresServer, rounds: int = 1, before: str = BEFORE
) -> list[Run]:
    """Each setup with the code before (`before`, a commit) and this tree's, taking turns."""
    runs = []
    for setup in setups:
        for round_ in range(rounds):
            for code in (before, "") if setup.store != "noop" else (NOOP,):
                directory = work / f"{setup.key}-{code or 'tree'}-{round_}"
                directory.mkdir(parents=True)
                try:
                    run = _run(setup, code, directory, postgres)
                except RuntimeError as error:  # a call refused, a watcher gone: the other code still runs
                    run = Run(setup.key, code, 0, 0, {}, 0, 0, 0, 0, 0, 0, 0, 0, os.getloadavg()[0], str(error))
                print(run.row(), file=sys.stderr, flush=True)
                runs.append(run)
    return runs


def _run(setup: WatchSetup, code: str, work: Path, postgres: PostgresServer) -> Run:
    per_worker = -(-setup.watches // setup.workers) if setup.store != "postgresql" else setup.watches
    env = {
        "PYTHONPATH": pythonpath("" if code == NOOP else code),
        "ZKPLATFORM_STATE_DIR": str(work),
        **PEPPER_ENV,
        "ZKPLATFORM_MAX_STREAMS": str(per_worker + 100),
        "ZKPLATFORM_WATCH_MAX_PER_WORKER": str(per_worker + 100),
        "ZKPLATFORM_WATCH_MAX_PER_PRINCIPAL": str(per_worker + 100),
    }
    cores = Cores.split() if setup.workers == 1 and setup.store != "postgresql" else None
    with ExitStack() as stack:
        if setup.store == "noop":
            command = [sys.executable, "-m", "hypercorn", "--bind", "127.0.0.1:{port}", "--backlog", "1024"]
            command += ["bench.noop_watches:app()"]
            server = stack.enter_context(
                serving(command, env, work / "server.log", ROOT, None if cores is None else cores.server)
            )
            token, vault = "no token", "v-0"
        elif setup.store == "memory":
            credentials = work / "credentials.json"
            command = [sys.executable, "-m", "zkplatform", "serve", "--bind", "127.0.0.1:{port}", "--dev"]
            command += ["--dev-credentials", str(credentials)]
            server = stack.enter_context(
                serving(command, env, work / "server.log", ROOT, None if cores is None else cores.server)
            )
            token, vault = dev_token(credentials)
        else:
            url, tokens = stack.enter_context(postgres.database(LAYOUT, code))
            key = work / "log.key"  # a server on PostgreSQL starts only with a log key made for it
            key.write_text(generate_signer_key("bench.local")[0] + "\n")
            env["ZKPLATFORM_LOG_KEY_FILES"] = str(key)
            command = [sys.executable, "-m", "zkplatform", "serve", "--bind", "127.0.0.1:{port}"]
            command += ["--store", url, "--workers", str(setup.workers)]
            server = stack.enter_context(serving(command, env, work / "server.log", ROOT))
            token, vault = tokens.delete, "v-0"
        return asyncio.run(_measured(setup, code, server, token, vault, None if cores is None else cores.load))


def dev_token(credentials: Path) -> tuple[str, str]:
    """The owner's token of the development data set, and the vault only the owner is a member of."""
    deadline = time.monotonic() + CREDENTIALS_TIMEOUT_S
    while not credentials.exists():
        if time.monotonic() > deadline:
            msg = f"no credentials at {credentials}"
            raise RuntimeError(msg)
        time.sleep(0.1)
    tenant = json.loads(credentials.read_text())["tenants"][0]
    owner = next(p for p in tenant["principals"] if p["role"] == "owner")
    vault = next(v for v in tenant["vaults"] if v["members"] == [owner["principalId"]])
    return owner["token"], vault["vaultId"]


async def _measured(  # noqa: PLR0913, PLR0917 # what one run is made of
    setup: WatchSetup, code: str, server: Running, token: str, vault: str, load_cores: frozenset[int] | None
) -> Run:
    since, item = await latest(server.port, token, vault)
    before = server.rss_kib()
    with watchers(setup, server.port, token, vault, since, load_cores) as held:
        opened = [json.loads(line(w)) for w in held]
        count = sum(o["opened"] for o in opened)
        rss_opened = server.rss_kib()
        cpu_before, started = server.cpu_seconds(), time.monotonic()
        await asyncio.sleep(IDLE_S)
        idle = (server.cpu_seconds() - cpu_before) / (time.monotonic() - started)
        rss_idle = server.rss_kib()
        committed: dict[int, float] = {}
        for n in range(CHANGES):
            if n:
                await asyncio.sleep(FANOUT_GAP_S)
            item, sequence = await update(server.port, token, item)
            committed[sequence] = time.monotonic()
        ask = json.dumps({"collect": list(committed), "timeout": COLLECT_TIMEOUT_S}) + "\n"
        for w in held:
            assert w.stdin is not None  # piped
            w.stdin.write(ask.encode())
            w.stdin.flush()
        answers = [json.loads(line(w)) for w in held]
    delays = [(at - committed[int(seq)]) * 1000 for a in answers for seq, ats in a["arrivals"].items() for at in ats]
    expected = CHANGES * (count - sum(a["ended"] for a in answers))
    cuts = statistics.quantiles(delays, n=100, method="inclusive") if len(delays) > 1 else [0.0] * 99
    refused: dict[str, int] = {}
    for o in opened:
        for key, n in o["refused"].items():
            refused[key] = refused.get(key, 0) + n
    return Run(
        setup=setup.key,
        code=code,
        opened=count,
        resets=sum(o["resets"] for o in opened),
        refused=refused,
        open_s=max(o["open_s"] for o in opened),
        kib_per_watch=(rss_opened - before) / max(count, 1),
        kib_per_watch_after_idle=(rss_idle - before) / max(count, 1),
        idle_core_pct=idle * 100,
        p50_ms=statistics.median(delays) if delays else 0.0,
        p99_ms=cuts[98],
        max_ms=max(delays, default=0.0),
        missing=expected - len(delays),
        load_average=os.getloadavg()[0],
    )


@contextmanager
def watchers(  # noqa: PLR0913, PLR0917 # the spec each watcher process is given
    setup: WatchSetup, port: int, token: str, vault: str, since: int, cores: frozenset[int] | None
) -> Iterator[list[subprocess.Popen[bytes]]]:
    processes = []
    try:
        for n in range(setup.watcher_processes):
            count = setup.watches // setup.watcher_processes + (n < setup.watches % setup.watcher_processes)
            process = subprocess.Popen(  # the harness starts its watchers from one thread
                [sys.executable, "-m", "bench.watchers"],
                cwd=ROOT,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                preexec_fn=pinned_to(cores),  # noqa: PLW1509 # see above
            )
            processes.append(process)
            spec = {"port": port, "token": token, "vault": vault, "since": since, "count": count}
            assert process.stdin is not None  # piped
            process.stdin.write((json.dumps(spec | {"protocol": setup.protocol}) + "\n").encode())
            process.stdin.flush()
        yield processes
    finally:
        for process in processes:
            if process.stdin is not None:
                process.stdin.close()
        for process in processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def line(process: subprocess.Popen[bytes]) -> str:
    """The watcher's next answer; its end is an error (it printed why on stderr)."""
    stdout: IO[bytes] | None = process.stdout
    assert stdout is not None  # piped
    line = stdout.readline()
    if not line:
        msg = f"a watcher process ended ({process.wait(timeout=OPEN_TIMEOUT_S)})"
        raise RuntimeError(msg)
    return line.decode()


async def _call(port: int, method: str, token: str, request: Message) -> bytes:
    """One call on a connection of its own (an idle keep-alive connection is closed by the server)."""
    connection = await Connection.open(port)
    try:
        return await connection.unary(method, token, request)
    finally:
        connection.close()


async def latest(port: int, token: str, vault: str) -> tuple[int, vault_pb2.Item]:
    """The vault's latest sequence, and the item of its latest change (the one the writer updates)."""
    since, item = 0, None
    while True:
        request = vault_pb2.ListChangesRequest(vault_id=vault, since_sequence=since, page_size=1000)
        page = vault_pb2.ListChangesResponse.FromString(await _call(port, "ListChanges", token, request))
        if page.changes:
            item = page.changes[-1].item
        since = page.cursor.sequence
        if not page.has_more:
            break
    if item is None:
        msg = f"vault {vault} has no change"
        raise RuntimeError(msg)
    return since, item


async def update(port: int, token: str, item: vault_pb2.Item) -> tuple[vault_pb2.Item, int]:
    """The item again, same content, a version up: one change. The new item and the change's sequence."""
    request = vault_pb2.UpdateItemRequest(
        vault_id=item.vault_id, item_id=item.item_id, kind=item.kind, title_hash=item.title_hash,
        encrypted_payload=item.encrypted_payload, wrapped_keys=item.wrapped_keys, base_version=item.version,
    )  # fmt: skip
    answer = vault_pb2.UpdateItemResponse.FromString(await _call(port, "UpdateItem", token, request))
    return answer.item, answer.cursor.sequence


def table(runs: list[Run]) -> str:
    return "\n".join([HEADER, *(run.row() for run in runs)])


def chosen(only: str, scale: float) -> tuple[WatchSetup, ...]:
    keys = [key for key in only.split(",") if key]
    picked = tuple(setup for setup in SETUPS if not keys or setup.key in keys)
    return tuple(replace(s, watches=max(s.watcher_processes, round(s.watches * scale))) for s in picked)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.watches10k", description=__doc__.split("\n", 1)[0])
    parser.add_argument("--only", default="", help="setups by key, comma-separated: " + ",".join(s.key for s in SETUPS))
    parser.add_argument("--scale", type=float, default=1.0, help="a fraction of the watches, for a trial")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--before", default=BEFORE, help=f"the commit served beside this tree (default {BEFORE})")
    parser.add_argument("--keep", type=Path, help="a new directory to keep the servers' logs and state in")
    args: Any = parser.parse_args(argv)
    with ExitStack() as stack:
        work = args.keep or Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="zk-watches-")))
        runs = measure(chosen(args.only, args.scale), work, PostgresServer(stack), args.rounds, args.before)
    print(table(runs))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
