"""Stalled watchers beside well-behaved ones: what a WatchChanges client that reads nothing costs
the server, whether the server gives it up, and whether the watchers that do read still get every
change, in time.

Each soak is one real `zkplatform serve`, one worker, on a store seeded as bench/watching.py's (one
vault, `v-0`, of 1,000 items), its watch limits raised as there. Its clients, all of one principal:

- READING_H2 watches on RawH2 connections that carry stalled streams too (the first
  MIXED_CONNECTIONS), and READING_H1 on HTTP/1.1 connections of their own: they read everything.
- STALLED_H2 watches over HTTP/2, spread over H2_CONNECTIONS connections: each reads its first
  message, then its stream's window is never refilled (bench/wire.py: RawH2); and STALLED_H1
  HTTP/1.1 connections whose socket is never read again after the first message.

The reading watches open first and WARM_WRITES changes pass (the write path and the watches
warmed): the worker's VmRSS is then "before". The stalled watches open: "opened". Then WRITES
UpdateItem calls, each with a ciphertext of the largest size allowed (48 KiB), at WRITE_RATE a
second, the VmRSS sampled every SAMPLE_S: its peak. Once the reading watches have every change:
"end"; the stalled calls the server gave up, those whose access line (told apart by its request
id) was written while their clients were still there, `code=canceled` meant; and the HTTP/2
streams it reset. Then the stalled clients go (HTTP/2: the client resets their streams on the
mixed connections and closes the other connections; HTTP/1.1: closed) and, once each of their
calls has ended or CLOSE_TIMEOUT_S has passed, "closed".

Each soak with the server's ZKPLATFORM_CLIENT_STALL_SECONDS set short, so that the server gives
the stalled watches up early in the run, or left to its default.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import re
import statistics
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import AsyncExitStack, ExitStack, asynccontextmanager, contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from bench.other_commits import ROOT, pythonpath
from bench.plan import THOUSAND, Setup
from bench.seed import Tokens, bench_item
from bench.servers import Running, serving
from bench.stores import PEPPER_ENV, PostgresServer, sqlite_store
from bench.watching import LAYOUT, OPEN_TIMEOUT_S, OPENING_AT_ONCE, VAULT, WATCH_ENV
from bench.wire import Connection, Messages, RawH2
from zkplatform.config import DEFAULT_CLIENT_STALL_SECONDS
from zkplatform.messages.convert import item_to_proto
from zkplatform_api.platform.v1 import vault_pb2

READING_H2 = 10
READING_H1 = 10
STALLED_H2 = 100
STALLED_H1 = 20
STALLED = STALLED_H2 + STALLED_H1
H2_CONNECTIONS = 10  # the stalled HTTP/2 streams' connections, 10 streams on each
MIXED_CONNECTIONS = 5  # of those, the ones that carry the reading HTTP/2 watches too (2 on each)
WARM_WRITES = 20
WRITES = 500
WRITE_S = 150  # the writes' span: about 3.3 UpdateItem calls a second
WRITE_RATE = WRITES / WRITE_S
SHORT_STALL_S = 10  # ZKPLATFORM_CLIENT_STALL_SECONDS where a soak sets it
# Each soak's store and stall bound (None: the server's default, DEFAULT_CLIENT_STALL_SECONDS).
SOAKS = (("postgresql", SHORT_STALL_S), ("postgresql", None), ("sqlite", SHORT_STALL_S))
SAMPLE_S = 0.5
DRAIN_TIMEOUT_S = 30  # for the reading watches to receive the last change
CLOSE_TIMEOUT_S = 30  # for the stalled calls to end once their clients went
# base64url without padding, 49,152 characters: the most the contract allows (vault.proto, EncryptedPayload).
CIPHERTEXT = base64.urlsafe_b64encode(bytes(range(256)) * 144).decode()
_ACCESS_LINE = re.compile(r"procedure=\S*/WatchChanges .*\bcode=(\S+) duration_ms=(\S+) .*\brequest_id=(\S+)")


@dataclass(frozen=True, slots=True)
class GivenUp:
    """The stalled calls of one protocol that the server ended while their clients were still there."""

    calls: int
    after_s: float | None  # their median duration: from the call's start to its end
    codes: dict[str, int]  # their access lines' codes ("canceled" meant)


@dataclass(frozen=True, slots=True)
class Soak:
    store: str  # "postgresql" or "sqlite"
    stall_s: int  # the server's ZKPLATFORM_CLIENT_STALL_SECONDS
    stall_default: bool  # left to its default
    write_s: float  # from the first write's call to the last one's answer
    rss_before_mib: float  # the reading watches open and warmed
    rss_opened_mib: float  # the stalled watches open too
    rss_peak_mib: float  # the largest sample, from the stalled watches open to "closed"
    peak_at_s: float  # when it came, from the first write
    rss_end_mib: float  # every change received by the reading watches
    rss_closed_mib: float  # the stalled clients gone and their calls ended (or CLOSE_TIMEOUT_S passed)
    given_up: dict[str, GivenUp]  # by protocol: "HTTP/2", "HTTP/1.1"
    h2_resets: int  # stalled HTTP/2 streams the server reset, as their clients saw
    ended_after_close: int  # stalled calls that had ended by "closed", of STALLED
    errors_logged: int  # ERROR lines in the server's log (each with a traceback)
    p50_s: float  # commit to client, over the reading watches and the soak's changes
    p99_s: float
    samples: int  # changes times reading watches received
    missing: int  # changes a reading watch never received (within DRAIN_TIMEOUT_S): should be none
    reading_ended: int  # reading watches that ended before the soak did: should be none
    server_cores: float  # the server's CPU during the writes, in cores

    @property
    def kib_per_stalled(self) -> float:
        """The server's peak over its RSS with the stalled watches open, per stalled watch."""
        return (self.rss_peak_mib - self.rss_opened_mib) * 1024 / STALLED

    @property
    def kib_per_stalled_all_told(self) -> float:
        """The same from before the stalled watches opened: their first message included."""
        return (self.rss_peak_mib - self.rss_before_mib) * 1024 / STALLED


def measure(work: Path, postgres: PostgresServer) -> list[Soak]:
    work.mkdir(parents=True)
    soaks = []
    for store, stall_s in SOAKS:
        directory = work / f"{store}-{stall_s or 'default'}"
        directory.mkdir()
        with _store(store, directory, postgres) as (url, tokens), _server(url, directory, stall_s) as server:
            soaks.append(asyncio.run(_soak(server, directory / "server.log", tokens.delete, store, stall_s)))
    return soaks


@contextmanager
def _store(store: str, work: Path, postgres: PostgresServer) -> Iterator[tuple[str, Tokens]]:
    if store == "sqlite":
        yield sqlite_store(work, LAYOUT)
    else:
        with postgres.database(LAYOUT) as found:
            yield found


@contextmanager
def _server(store_url: str, work: Path, stall_s: int | None) -> Iterator[Running]:
    command = Setup("stalled", "hypercorn", "zkplatform", "sqlite", 1, THOUSAND, ()).command(store_url)
    stall = {} if stall_s is None else {"ZKPLATFORM_CLIENT_STALL_SECONDS": str(stall_s)}
    env = {"PYTHONPATH": pythonpath(""), "ZKPLATFORM_STATE_DIR": str(work), **PEPPER_ENV, **WATCH_ENV, **stall}
    with serving(command, env, work / "server.log", ROOT) as server:
        yield server


async def _soak(server: Running, log: Path, token: str, store: str, stall_s: int | None) -> Soak:
    async with AsyncExitStack() as stack:
        clients = _Clients(stack, server.port, token)
        await clients.open_reading(LAYOUT.vault_size - 1)  # the seeded vault's sequence is its size
        warm = await _write(server.port, token, range(WARM_WRITES))
        await clients.drained(max(warm))
        before = server.rss_kib()
        await clients.open_stalled(max(warm) - 1)  # each reads the last change, then nothing
        opened = server.rss_kib()
        async with _sampling(server) as samples:
            started, cpu_before = time.monotonic(), server.cpu_seconds()
            committed = await _write(server.port, token, range(WARM_WRITES, WARM_WRITES + WRITES))
            write_s = time.monotonic() - started
            cores = (server.cpu_seconds() - cpu_before) / write_s
            with contextlib.suppress(TimeoutError):  # counted as missing below
                await clients.drained(max(committed))
            end = server.rss_kib()
            given_up, resets = _given_up(log), clients.h2_resets()
            clients.close_stalled()
            ended_after_close = await _stalled_ended(log)
            closed = server.rss_kib()
        reading_ended = clients.reading_ended()
    peak_at, peak = max(samples, key=lambda sample: sample[1])
    delays = [arrivals[seq] - at for arrivals in clients.arrivals for seq, at in committed.items() if seq in arrivals]
    cuts = statistics.quantiles(delays, n=100, method="inclusive")
    return Soak(
        store=store, stall_s=stall_s or DEFAULT_CLIENT_STALL_SECONDS, stall_default=stall_s is None, write_s=write_s,
        rss_before_mib=before / 1024, rss_opened_mib=opened / 1024, rss_peak_mib=max(peak, opened) / 1024,
        peak_at_s=peak_at - started, rss_end_mib=end / 1024, rss_closed_mib=closed / 1024,
        given_up=given_up, h2_resets=resets, ended_after_close=ended_after_close, errors_logged=_errors_logged(log),
        p50_s=statistics.median(delays), p99_s=cuts[98], samples=len(delays),
        missing=len(committed) * len(clients.arrivals) - len(delays), reading_ended=reading_ended,
        server_cores=cores,
    )  # fmt: skip


class _Clients:
    """The soak's watches: the reading ones, with when each change reached them, and the stalled ones' connections."""

    def __init__(self, stack: AsyncExitStack, port: int, token: str) -> None:
        self._stack = stack
        self._port = port
        self._token = token
        self.h2: list[RawH2] = []
        self.stalled_h1: list[Connection] = []
        self.arrivals: list[dict[int, float]] = []  # by reading watch: each change's sequence, when it came
        self.readers: list[asyncio.Task[None]] = []
        self._progress = asyncio.Event()  # a reading watch received a message, or ended

    async def open_reading(self, since: int) -> None:
        await self._h2_connections(MIXED_CONNECTIONS)
        h2 = [
            partial(self._h2_watch, n % MIXED_CONNECTIONS, f"reading-h2-{n}", since, read=True)
            for n in range(READING_H2)
        ]
        h1 = [partial(self._h1_watch, f"reading-h1-{n}", since, stalled=False) for n in range(READING_H1)]
        for watch in await _live([*h2, *h1], since):
            arrivals: dict[int, float] = {}
            self.arrivals.append(arrivals)
            reader = asyncio.create_task(self._receive(watch, arrivals))
            reader.add_done_callback(lambda _: self._progress.set())
            self._stack.callback(reader.cancel)
            self.readers.append(reader)

    async def open_stalled(self, since: int) -> None:
        await self._h2_connections(H2_CONNECTIONS - MIXED_CONNECTIONS)  # opened now: idle, they would be closed
        h2 = [
            partial(self._h2_watch, n % H2_CONNECTIONS, f"stalled-h2-{n}", since, read=False) for n in range(STALLED_H2)
        ]
        h1 = [partial(self._h1_watch, f"stalled-h1-{n}", since, stalled=True) for n in range(STALLED_H1)]
        await _live([*h2, *h1], since)
        for connection in self.stalled_h1:
            connection.stop_reading()

    async def drained(self, last: int) -> None:
        """Until every reading watch has received the change `last` or ended (DRAIN_TIMEOUT_S at most)."""
        readers = list(zip(self.arrivals, self.readers, strict=True))
        async with asyncio.timeout(DRAIN_TIMEOUT_S):
            while not all(last in arrivals or reader.done() for arrivals, reader in readers):
                self._progress.clear()
                await self._progress.wait()

    def reading_ended(self) -> int:
        """The reading watches that have ended: none should."""
        return sum(reader.done() for reader in self.readers)

    def close_stalled(self) -> None:
        for n, connection in enumerate(self.h2):
            if n < MIXED_CONNECTIONS:
                connection.cancel_stalled()  # its reading watches go on
            else:
                connection.close()
        for stalled in self.stalled_h1:
            stalled.close()

    def h2_resets(self) -> int:
        return sum(connection.stalled_resets() for connection in self.h2)

    async def _receive(self, watch: Messages, arrivals: dict[int, float]) -> None:
        while True:
            message = await watch.next()
            at = time.monotonic()
            for change in message.changes:
                arrivals[change.sequence] = at
            self._progress.set()

    async def _h2_connections(self, count: int) -> None:
        for _ in range(count):
            connection = await RawH2.open(self._port)
            self._stack.callback(connection.close)
            self.h2.append(connection)

    async def _h2_watch(self, connection: int, request_id: str, since: int, *, read: bool) -> Messages:
        return await self.h2[connection].watch(self._token, VAULT, since, request_id, read=read)

    async def _h1_watch(self, request_id: str, since: int, *, stalled: bool) -> Messages:
        connection = await Connection.open(self._port)
        self._stack.callback(connection.close)
        if stalled:
            self.stalled_h1.append(connection)
        return await connection.watch(self._token, VAULT, since, request_id)


async def _live(opening: list[Callable[[], Awaitable[Messages]]], since: int) -> list[Messages]:
    """The watches, each once its first message came (the change after `since`), opened
    OPENING_AT_ONCE at a time."""
    gate = asyncio.Semaphore(OPENING_AT_ONCE)

    async def one(open_watch: Callable[[], Awaitable[Messages]]) -> Messages:
        async with gate:
            watch = await open_watch()
            first = await watch.next()
        if [change.sequence for change in first.changes] != [since + 1]:
            msg = f"a watch's first message has the changes {[change.sequence for change in first.changes]}"
            raise RuntimeError(msg)
        return watch

    async with asyncio.timeout(OPEN_TIMEOUT_S):
        return list(await asyncio.gather(*(one(open_watch) for open_watch in opening)))


@asynccontextmanager
async def _sampling(server: Running) -> AsyncIterator[list[tuple[float, int]]]:
    """The server's VmRSS every SAMPLE_S while in the block, with when it was read."""
    samples: list[tuple[float, int]] = []

    async def sample() -> None:
        while True:
            samples.append((time.monotonic(), server.rss_kib()))
            await asyncio.sleep(SAMPLE_S)

    sampler = asyncio.create_task(sample())
    try:
        yield samples
    finally:
        sampler.cancel()


def _given_up(log: Path) -> dict[str, GivenUp]:
    """The stalled calls that have ended so far, by protocol."""
    ended = _access_lines(log)
    found = {}
    for protocol, prefix in (("HTTP/2", "stalled-h2-"), ("HTTP/1.1", "stalled-h1-")):
        calls = [(code, seconds) for request_id, (code, seconds) in ended.items() if request_id.startswith(prefix)]
        after_s = statistics.median(seconds for _, seconds in calls) if calls else None
        found[protocol] = GivenUp(len(calls), after_s, dict(Counter(code for code, _ in calls)))
    return found


async def _stalled_ended(log: Path) -> int:
    """How many stalled calls have ended (their access line written), once all have or CLOSE_TIMEOUT_S passed."""
    deadline = time.monotonic() + CLOSE_TIMEOUT_S
    while True:
        ended = sum(request_id.startswith("stalled-") for request_id in _access_lines(log))
        if ended == STALLED or time.monotonic() >= deadline:
            return ended
        await asyncio.sleep(0.2)


async def _write(port: int, token: str, writes: range) -> dict[int, float]:
    """UpdateItem calls at WRITE_RATE a second: each change's sequence, and when its answer came."""
    connection = await Connection.open(port)
    committed: dict[int, float] = {}
    try:
        started = time.monotonic()
        for k, n in enumerate(writes):
            await asyncio.sleep(max(0.0, started + k / WRITE_RATE - time.monotonic()))
            answer = vault_pb2.UpdateItemResponse.FromString(await connection.unary("UpdateItem", token, _update(n)))
            committed[answer.cursor.sequence] = time.monotonic()
    finally:
        connection.close()
    return committed


def _update(n: int) -> vault_pb2.UpdateItemRequest:
    """The soak's nth write: seeded item n (round the vault) from its current version, with a 48 KiB ciphertext."""
    item = item_to_proto(bench_item(n % LAYOUT.vault_size, 1), retention=0)  # a live item: no purge time
    item.encrypted_payload.ciphertext = CIPHERTEXT
    return vault_pb2.UpdateItemRequest(
        vault_id=item.vault_id, item_id=item.item_id, kind=item.kind, title_hash=item.title_hash,
        encrypted_payload=item.encrypted_payload, wrapped_keys=item.wrapped_keys[:1],
        base_version=1 + n // LAYOUT.vault_size,
    )  # fmt: skip


def _errors_logged(log: Path) -> int:
    return sum(" ERROR " in line for line in log.read_text(errors="replace").splitlines())


def _access_lines(log: Path) -> dict[str, tuple[str, float]]:
    """The WatchChanges calls that have ended, by request id: their code and duration in seconds."""
    lines = log.read_text(errors="replace").splitlines()
    matches = (match for line in lines if (match := _ACCESS_LINE.search(line)))
    return {match[3]: (match[1], float(match[2]) / 1000) for match in matches}


if __name__ == "__main__":
    import tempfile

    with ExitStack() as stack, tempfile.TemporaryDirectory(prefix="zk-stalled-") as tmp:
        for soak in measure(Path(tmp) / "stalled", PostgresServer(stack)):
            print(soak)
