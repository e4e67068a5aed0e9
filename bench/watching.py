"""The watches' figures: what 1,000 idle WatchChanges streams cost one worker, and how long a
change takes from its commit to the watchers of another server on the same store.

Run after the loads, alone on the machine. Each server is the real `zkplatform serve`, one
worker, on a store seeded as bench/seed.py does (one vault, `v-0`, of 1,000 items), its watch
limits raised so that 1,000 watches of one principal fit. Every watch starts one change
before the vault's end: its first message, that change, shows it open and live.

- Idle streams (SQLite): the worker's resident set (VmRSS) before and after opening the
  watches, over their number; then its CPU time (utime + stime) while they stay open for
  IDLE_S, two heartbeat periods, so every watch re-checks its token and membership twice.
- Commit to client: two servers on one store, one serving WATCHERS watches and one taking
  WRITES UpdateItem calls at WRITE_RATE a second, so every change is made by another
  process than the one whose watches must learn of it (SQLite: its poller; PostgreSQL:
  LISTEN). For each change and watcher: from the writer receiving its answer (the commit
  is done) to the watcher receiving the change, matched by sequence.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Iterator
from contextlib import AsyncExitStack, ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

from bench.other_commits import ROOT, pythonpath
from bench.plan import THOUSAND, Setup
from bench.seed import Layout, Tokens, bench_item
from bench.servers import Running, serving
from bench.stores import PEPPER_ENV, PostgresServer, sqlite_store
from bench.wire import Connection, Messages, h2_client, h2_watch
from zkplatform.config import DEFAULT_WATCH_HEARTBEAT_SECONDS
from zkplatform.messages.convert import item_to_proto
from zkplatform_api.platform.v1 import vault_pb2

IDLE_STREAMS = 1000
IDLE_S = 2 * DEFAULT_WATCH_HEARTBEAT_SECONDS  # two heartbeat periods (the default's, 15 s)
WATCHERS = 100
WRITES = 200
WRITE_RATE = 20  # UpdateItem calls a second
H2_STREAMS = 100  # watches on one HTTP/2 connection: hypercorn's most concurrent streams (its default)
OPENING_AT_ONCE = 50  # watches being opened at a time (hypercorn's listen backlog is 100)
OPEN_TIMEOUT_S = 120
DRAIN_TIMEOUT_S = 30  # for the watchers to receive the last change
VAULT = "v-0"
LAYOUT = Layout(vault_size=THOUSAND, items=THOUSAND, minters=1)
SINCE = LAYOUT.vault_size - 1  # the seeded vault's sequence is its size: one change follows
# Room for the idle streams of one principal on one worker, and the streams' own limit above it.
WATCH_ENV = {
    "ZKPLATFORM_WATCH_MAX_PER_PRINCIPAL": "2000",
    "ZKPLATFORM_WATCH_MAX_PER_WORKER": "2000",
    "ZKPLATFORM_MAX_STREAMS": "2100",
}


@dataclass(frozen=True, slots=True)
class Latency:
    p50_s: float
    p99_s: float
    max_s: float
    samples: int  # changes times watchers received
    missing: int  # changes a watcher never received (within DRAIN_TIMEOUT_S): should be none
    watched_cores: float  # the CPU of the watches' server while the changes came, in cores
    written_cores: float  # the writer's server's


@dataclass(frozen=True, slots=True)
class Idle:
    connections: int
    rss_before_mib: float
    rss_opened_mib: float  # once every watch is open and live
    rss_after_mib: float  # after the idle window: what the watches hold for good
    seconds: float
    cores: float  # the worker's CPU time over the idle window, in cores

    def kib_per_stream(self, rss_mib: float) -> float:
        return (rss_mib - self.rss_before_mib) * 1024 / IDLE_STREAMS


@dataclass(frozen=True, slots=True)
class WatchFigures:
    idle: dict[str, Idle]  # by protocol: "HTTP/1.1", "HTTP/2"
    latency: dict[str, Latency]  # by store: "sqlite", "postgresql"


def measure(work: Path, postgres: PostgresServer) -> WatchFigures:
    work.mkdir(parents=True)
    idle = {}
    for protocol, h2_connections in (("HTTP/1.1", 0), ("HTTP/2", -(-IDLE_STREAMS // H2_STREAMS))):
        directory = work / f"idle-{protocol.replace('/', '')}"
        with _sqlite(directory) as (url, tokens), _server(url, directory) as server:
            idle[protocol] = asyncio.run(_idle(server, tokens.delete, h2_connections))
    latency = {}
    with _sqlite(work / "sqlite") as (url, tokens):
        latency["sqlite"] = _latency_between_servers(url, tokens, work / "sqlite")
    with postgres.database(LAYOUT) as (url, tokens):
        latency["postgresql"] = _latency_between_servers(url, tokens, work / "postgresql")
    return WatchFigures(idle, latency)


@contextmanager
def _sqlite(work: Path) -> Iterator[tuple[str, Tokens]]:
    work.mkdir()
    yield sqlite_store(work, LAYOUT)


@contextmanager
def _server(store_url: str, work: Path, name: str = "server") -> Iterator[Running]:
    command = Setup(f"watch-{name}", "hypercorn", "zkplatform", "sqlite", 1, THOUSAND, ()).command(store_url)
    env = {"PYTHONPATH": pythonpath(""), "ZKPLATFORM_STATE_DIR": str(work), **PEPPER_ENV, **WATCH_ENV}
    with serving(command, env, work / f"{name}.log", ROOT) as server:
        yield server


async def _idle(server: Running, token: str, h2_connections: int) -> Idle:
    """The worker's RSS before opening the watches (on HTTP/2 connections, or with none on one
    HTTP/1.1 connection each), once open, after the idle window; the worker's CPU time in that window."""
    async with AsyncExitStack() as warm:  # what the first watch loads or starts (the poller)
        await _watches(warm, server.port, token, 1, min(h2_connections, 1))
    async with AsyncExitStack() as stack:
        before = server.rss_kib()
        watches = await _watches(stack, server.port, token, IDLE_STREAMS, h2_connections)
        opened = server.rss_kib()
        readers = [asyncio.create_task(_discard(watch)) for watch in watches]  # heartbeats
        try:
            started, cpu_before = time.monotonic(), server.cpu_seconds()
            await asyncio.sleep(IDLE_S)
            cpu, wall = server.cpu_seconds() - cpu_before, time.monotonic() - started
            after = server.rss_kib()
        finally:
            for reader in readers:
                reader.cancel()
    if any(reader.done() and not reader.cancelled() for reader in readers):
        msg = "a watch ended while idle"
        raise RuntimeError(msg)
    return Idle(h2_connections or IDLE_STREAMS, before / 1024, opened / 1024, after / 1024, wall, cpu / wall)


async def _watches(stack: AsyncExitStack, port: int, token: str, count: int, h2_connections: int) -> list[Messages]:
    """`count` watches of the vault, each open once its first message came, closed with `stack`:
    shared over `h2_connections` HTTP/2 connections, or with none on one HTTP/1.1 connection each."""
    opening = asyncio.Semaphore(OPENING_AT_ONCE)
    clients = [await stack.enter_async_context(h2_client(port)) for _ in range(h2_connections)]

    async def one(n: int) -> Messages:
        async with opening:
            if clients:
                watch = await h2_watch(stack, clients[n % h2_connections], token, VAULT, SINCE)
            else:
                connection = await Connection.open(port)
                stack.callback(connection.close)
                watch = await connection.watch(token, VAULT, SINCE)
            first = await watch.next()
        if [change.sequence for change in first.changes] != [SINCE + 1]:
            msg = f"a watch's first message: {first}"
            raise RuntimeError(msg)
        return watch

    async with asyncio.timeout(OPEN_TIMEOUT_S):
        return list(await asyncio.gather(*(one(n) for n in range(count))))


async def _discard(watch: Messages) -> None:
    while True:
        await watch.next()


def _latency_between_servers(store_url: str, tokens: Tokens, work: Path) -> Latency:
    work.mkdir(exist_ok=True)
    with ExitStack() as stack:
        watched = stack.enter_context(_server(store_url, work, "watched"))
        written = stack.enter_context(_server(store_url, work, "written"))
        return asyncio.run(_latency(watched, written, tokens.delete))


async def _latency(watched: Running, written: Running, token: str) -> Latency:
    async with AsyncExitStack() as stack:
        return await _delays(stack, watched, written, token)


async def _delays(stack: AsyncExitStack, watched: Running, written: Running, token: str) -> Latency:
    watches = await _watches(stack, watched.port, token, WATCHERS, h2_connections=0)
    received: list[dict[int, float]] = [{} for _ in watches]
    readers = [
        asyncio.create_task(_receive(watch, arrivals)) for watch, arrivals in zip(watches, received, strict=True)
    ]
    started, cpu_before = time.monotonic(), (watched.cpu_seconds(), written.cpu_seconds())
    try:
        committed = await _write(written.port, token)
        last = max(committed)
        async with asyncio.timeout(DRAIN_TIMEOUT_S):
            while not all(last in arrivals for arrivals in received):
                if any(reader.done() for reader in readers):
                    msg = "a watch ended"
                    raise RuntimeError(msg)
                await asyncio.sleep(0.05)
    except TimeoutError:
        pass  # counted as missing below
    finally:
        for reader in readers:
            reader.cancel()
    wall = time.monotonic() - started
    cores = [
        (server.cpu_seconds() - before) / wall for server, before in zip((watched, written), cpu_before, strict=True)
    ]
    delays = [arrivals[seq] - at for arrivals in received for seq, at in committed.items() if seq in arrivals]
    missing = len(committed) * len(received) - len(delays)
    cuts = statistics.quantiles(delays, n=100, method="inclusive")
    watched_cores, written_cores = cores
    return Latency(statistics.median(delays), cuts[98], max(delays), len(delays), missing, watched_cores, written_cores)


async def _receive(watch: Messages, arrivals: dict[int, float]) -> None:
    while True:
        message = await watch.next()
        at = time.monotonic()
        for change in message.changes:
            arrivals[change.sequence] = at


async def _write(port: int, token: str) -> dict[int, float]:
    """UpdateItem of WRITES seeded items at WRITE_RATE a second: each change's sequence, and when
    its answer came."""
    connection = await Connection.open(port)
    committed: dict[int, float] = {}
    try:
        started = time.monotonic()
        for n in range(WRITES):
            await asyncio.sleep(max(0.0, started + n / WRITE_RATE - time.monotonic()))
            request = _update(n)
            answer = vault_pb2.UpdateItemResponse.FromString(await connection.unary("UpdateItem", token, request))
            committed[answer.cursor.sequence] = time.monotonic()
    finally:
        connection.close()
    return committed


def _update(n: int) -> vault_pb2.UpdateItemRequest:
    """Seeded item n of the one vault, from its version 1, with its content (the owner's key only)."""
    item = item_to_proto(bench_item(n, 1), retention=0)  # a live item: no purge time
    return vault_pb2.UpdateItemRequest(
        vault_id=item.vault_id, item_id=item.item_id, kind=item.kind, title_hash=item.title_hash,
        encrypted_payload=item.encrypted_payload, wrapped_keys=item.wrapped_keys[:1], base_version=1,
    )  # fmt: skip


if __name__ == "__main__":
    import tempfile

    with ExitStack() as stack, tempfile.TemporaryDirectory(prefix="zk-watch-") as tmp:
        print(measure(Path(tmp) / "watch", PostgresServer(stack)))
