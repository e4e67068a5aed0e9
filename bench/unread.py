"""Unread one-shot answers beside a client that reads: bench/stalled.py's soak, for unary calls.

Issue 39: 600 ListItems calls over HTTP/2 (60 connections of 10 streams) on a vault of large
items, never read, took a worker from about 100 MiB to GiBs: each answer waited whole in the
server for a client that took nothing, and the stall bound gave each up only after 30 s.

Each soak is one real `zkplatform serve`, one worker, its settings left to their defaults (the
stall bound, and where the code has them the bounds on unread answers), on the store of
bench/stalled.py (`v-0` of 1,000 items), whose first page of PAGE items is first made as large
as the contract allows (48 KiB ciphertexts: a ListItems page then stops at its 3 MiB bound).
Its clients, all of one principal's token:

- a reader: ListItems of that page over HTTP/1.1, one call after the other, the whole soak;
- UNREAD_CONNECTIONS HTTP/2 connections of UNREAD_STREAMS gRPC ListItems calls each, all sent
  at once (one connection after the other), whose windows are never opened: the server can send
  them nothing but headers and resets.

RSS in MiB: before (the reader running, once it has read a page), the largest sample (every
SAMPLE_S s, for SOAK_S s: past the stall bound of 30 s), and closed (the unread connections
closed and their calls ended, or CLOSE_TIMEOUT_S passed). Counted: the unread calls that ended
while their clients were there (access lines, told apart by request id) and how; the streams
reset as their clients saw; the reader's pages, failures and latency. A server that passes
RSS_CEILING_MIB is not let go further: its unread connections are closed there, and the soak
says when (before the bounds, it would take the machine).

Each store's soak runs twice in one sitting: with the code before issue 39's bounds (BEFORE,
seeded and served by it) and with the working tree's, or a commit's given as the argument:
`python -m bench.unread [COMMIT]` (from the repository's root, the table on standard output), or
`BENCH_ONLY=unread make bench` (the working tree's, to standard error; the report it writes has
no figures of its own: set BENCH_OUTPUT to keep docs/benchmarks.md).
"""

from __future__ import annotations

import asyncio
import base64
import re
import statistics
import struct
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import h2.config
import h2.connection
import h2.events
import h2.settings

from bench.other_commits import ROOT, pythonpath
from bench.plan import THOUSAND, Setup
from bench.seed import Tokens
from bench.servers import Running, serving
from bench.stores import PEPPER_ENV, PostgresServer, sqlite_store
from bench.watching import LAYOUT, VAULT
from bench.wire import SERVICE, Connection
from zkplatform_api.platform.v1 import vault_pb2
from zkplatform_tlog.note import generate_signer_key

BEFORE = "8e82bb8"  # the commit before the bounds on unread answers (ea34291)
PAGE = 100  # ListItems' default page: about 60 items of 48 KiB fit its 3 MiB bound
UNREAD_CONNECTIONS = 60
UNREAD_STREAMS = 10  # hypercorn lets a connection have 100 at once
SOAK_S = 60  # twice the stall bound: every unread call the bounds kept is given up by then
SAMPLE_S = 0.5
CLOSE_TIMEOUT_S = 30
RSS_CEILING_MIB = 4096
# base64url without padding, 49,152 characters: the most the contract allows (vault.proto, EncryptedPayload).
CIPHERTEXT = base64.urlsafe_b64encode(bytes(range(256)) * 144).decode()
STORES = ("sqlite", "postgresql")
_ACCESS_LINE = re.compile(r"procedure=\S*/ListItems .*\bcode=(\S+) duration_ms=(\S+) .*\brequest_id=(unread-\S+)")


@dataclass(frozen=True, slots=True)
class Soak:
    store: str
    code: str  # BEFORE, or "working tree"
    rss_before_mib: float
    rss_peak_mib: float
    peak_at_s: float  # from the unread calls' sending
    ceiling_at_s: float | None  # when the server passed RSS_CEILING_MIB, its unread connections then closed
    rss_closed_mib: float
    answered_s: float | None  # until every unread call had its headers or its reset
    ended: dict[str, int]  # the unread calls that ended while their clients were there, by code
    ended_median_s: float | None  # their median duration
    resets: int  # unread streams the server reset, as their clients saw
    reads: int  # the reader's pages during the soak
    read_failures: int
    read_p50_ms: float
    read_p99_ms: float
    errors_logged: int  # ERROR lines in the server's log


def measure(work: Path, postgres: PostgresServer, after: str = "") -> list[Soak]:
    """Each store's soak with BEFORE's code, then with `after`'s ("": the working tree's)."""
    work.mkdir(parents=True)
    soaks = []
    for store in STORES:
        for code in (BEFORE, after):
            directory = work / f"{store}-{code or 'tree'}"
            directory.mkdir()
            with _store(store, directory, postgres, code) as (url, tokens), _server(url, directory, code) as server:
                soaks.append(asyncio.run(_soak(server, directory / "server.log", tokens.delete, store, code)))
            print(f"  unread: {soaks[-1]}", flush=True)
    return soaks


@contextmanager
def _store(store: str, work: Path, postgres: PostgresServer, code: str) -> Iterator[tuple[str, Tokens]]:
    if store == "sqlite":
        yield sqlite_store(work, LAYOUT, code)
    else:
        with postgres.database(LAYOUT, code) as found:
            yield found


@contextmanager
def _server(store_url: str, work: Path, code: str) -> Iterator[Running]:
    command = Setup("unread", "hypercorn", "zkplatform", "sqlite", 1, THOUSAND, ()).command(store_url)
    env = {"PYTHONPATH": pythonpath(code), "ZKPLATFORM_STATE_DIR": str(work), **PEPPER_ENV}
    if store_url.startswith("postgresql"):  # a server on PostgreSQL starts only with a log key made for it
        key = work / "log.key"
        key.write_text(generate_signer_key("bench.local")[0] + "\n")
        env["ZKPLATFORM_LOG_KEY_FILES"] = str(key)
    with serving(command, env, work / "server.log", ROOT) as server:
        yield server


async def _soak(server: Running, log: Path, token: str, store: str, code: str) -> Soak:
    await _enlarge_first_page(server.port, token)
    reader = _Reader(server.port, token)
    reading = asyncio.create_task(reader.run())
    await reader.first.wait()
    before = server.rss_kib()
    samples: list[tuple[float, int]] = []
    started = time.monotonic()
    unread = [await _UnreadCalls.open(server.port, token, n) for n in range(UNREAD_CONNECTIONS)]
    ceiling_at = answered_at = None
    while (now := time.monotonic()) < started + SOAK_S:
        samples.append((now - started, server.rss_kib()))
        if answered_at is None and all(calls.all_answered() for calls in unread):
            answered_at = now - started
        if samples[-1][1] > RSS_CEILING_MIB * 1024:
            ceiling_at = now - started
            break
        await asyncio.sleep(SAMPLE_S)
    ended = _ended(log)  # while their clients were there
    resets = sum(calls.resets for calls in unread)
    for calls in unread:
        calls.close()
    await _ended_all(log)
    closed = server.rss_kib()
    reader.stop = True
    await reading
    peak_at, peak = max(samples, key=lambda sample: sample[1])
    latencies = reader.latencies if len(reader.latencies) > 1 else [0.0, 0.0]
    cuts = statistics.quantiles(latencies, n=100, method="inclusive")
    return Soak(
        store=store, code=code or "working tree", rss_before_mib=before / 1024, rss_peak_mib=peak / 1024,
        peak_at_s=peak_at, ceiling_at_s=ceiling_at, rss_closed_mib=closed / 1024, answered_s=answered_at,
        ended=dict(Counter(code for code, _ in ended.values())),
        ended_median_s=statistics.median(seconds for _, seconds in ended.values()) if ended else None,
        resets=resets, reads=len(reader.latencies), read_failures=reader.failures,
        read_p50_ms=statistics.median(reader.latencies or [0.0]) * 1000, read_p99_ms=cuts[98] * 1000,
        errors_logged=_errors_logged(log),
    )  # fmt: skip


async def _enlarge_first_page(port: int, token: str) -> None:
    """Every item of the vault's first page, updated to the largest ciphertext the contract allows."""
    connection = await Connection.open(port)
    try:
        listed = vault_pb2.ListItemsRequest(vault_id=VAULT, page_size=PAGE)
        page = vault_pb2.ListItemsResponse.FromString(await connection.unary("ListItems", token, listed))
        for item in page.items:
            payload = vault_pb2.EncryptedPayload()
            payload.CopyFrom(item.encrypted_payload)
            payload.ciphertext = CIPHERTEXT
            update = vault_pb2.UpdateItemRequest(
                vault_id=item.vault_id, item_id=item.item_id, kind=item.kind, title_hash=item.title_hash,
                encrypted_payload=payload, wrapped_keys=item.wrapped_keys[:1], base_version=item.version,
            )  # fmt: skip
            await connection.unary("UpdateItem", token, update)
    finally:
        connection.close()


@dataclass
class _Reader:
    """ListItems of the first page over HTTP/1.1, one call after the other, until told to stop."""

    port: int
    token: str
    latencies: list[float] = field(default_factory=list)
    failures: int = 0
    stop: bool = False
    first: asyncio.Event = field(default_factory=asyncio.Event)

    async def run(self) -> None:
        request = vault_pb2.ListItemsRequest(vault_id=VAULT, page_size=PAGE)
        connection = await Connection.open(self.port)
        try:
            while not self.stop:
                began = time.monotonic()
                try:
                    async with asyncio.timeout(SOAK_S):
                        page = vault_pb2.ListItemsResponse.FromString(
                            await connection.unary("ListItems", self.token, request)
                        )
                except (OSError, EOFError, RuntimeError, TimeoutError, asyncio.IncompleteReadError):
                    self.failures += 1  # given up, or refused: a new connection
                    connection.close()
                    connection = await Connection.open(self.port)
                    continue
                if len(page.items) > 1:
                    self.latencies.append(time.monotonic() - began)
                    self.first.set()
        finally:
            connection.close()


class _UnreadCalls:
    """One HTTP/2 connection of gRPC ListItems calls whose answers are never read (no window)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer
        self._h2 = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
        self._h2.local_settings = h2.settings.Settings(
            client=True, initial_values={h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: 0}
        )
        self.answered: set[int] = set()
        self.resets = 0
        self._receiving: asyncio.Task[None] | None = None

    @classmethod
    async def open(cls, port: int, token: str, n: int) -> _UnreadCalls:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        calls = cls(reader, writer)
        calls._h2.initiate_connection()
        request = vault_pb2.ListItemsRequest(vault_id=VAULT, page_size=PAGE).SerializeToString()
        for k in range(UNREAD_STREAMS):
            headers = [
                (":method", "POST"), (":scheme", "http"), (":authority", "127.0.0.1"),
                (":path", SERVICE + "ListItems"), ("content-type", "application/grpc"), ("te", "trailers"),
                ("authorization", f"Bearer {token}"), ("x-request-id", f"unread-{n}-{k}"),
            ]  # fmt: skip
            stream_id = calls._h2.get_next_available_stream_id()
            calls._h2.send_headers(stream_id, headers)
            calls._h2.send_data(stream_id, struct.pack(">BI", 0, len(request)) + request, end_stream=True)
        writer.write(calls._h2.data_to_send())
        calls._receiving = asyncio.create_task(calls._receive())
        return calls

    def all_answered(self) -> bool:
        return len(self.answered) == UNREAD_STREAMS

    def close(self) -> None:
        if self._receiving is not None:
            self._receiving.cancel()
        self._writer.close()

    async def _receive(self) -> None:
        """Read what the server sends (headers, resets: it can send no data), granting no window."""
        while data := await self._reader.read(65536):
            for event in self._h2.receive_data(data):
                if isinstance(event, h2.events.ResponseReceived):
                    self.answered.add(event.stream_id)
                elif isinstance(event, h2.events.StreamReset):
                    self.answered.add(event.stream_id)
                    self.resets += 1
            self._writer.write(self._h2.data_to_send())  # settings and ping acknowledgements only


def _ended(log: Path) -> dict[str, tuple[str, float]]:
    """The unread calls that have ended so far, by request id: their code and duration in seconds."""
    lines = log.read_text(errors="replace").splitlines()
    matches = (match for line in lines if (match := _ACCESS_LINE.search(line)))
    return {match[3]: (match[1], float(match[2]) / 1000) for match in matches}


async def _ended_all(log: Path) -> None:
    """Until every unread call has ended, or CLOSE_TIMEOUT_S passed."""
    deadline = time.monotonic() + CLOSE_TIMEOUT_S
    while True:
        if len(_ended(log)) == UNREAD_CONNECTIONS * UNREAD_STREAMS or time.monotonic() >= deadline:
            return
        await asyncio.sleep(0.2)


def _errors_logged(log: Path) -> int:
    return sum(" ERROR " in line for line in log.read_text(errors="replace").splitlines())


def table(soaks: list[Soak]) -> str:
    """The soaks as bench/analysis.md shows them."""
    rows = [
        "| store, code | before | peak (at) | closed | all answered after | ended while there | reset | reader: pages, failed, p50, p99 |",  # noqa: E501
        "|---|---:|---:|---:|---:|---|---:|---|",
    ]
    for soak in soaks:
        over = soak.ceiling_at_s
        ceiling = f", over {RSS_CEILING_MIB:,} MiB at {over:.1f} s: stopped there" if over is not None else ""
        ended = ", ".join(f"{count} {code}" for code, count in sorted(soak.ended.items())) or "none"
        after = f" after {soak.ended_median_s:.1f} s" if soak.ended_median_s is not None else ""
        answered = f"{soak.answered_s:.1f} s" if soak.answered_s is not None else "not all"
        rows.append(
            f"| {soak.store}, {soak.code} | {soak.rss_before_mib:,.0f} | {soak.rss_peak_mib:,.0f}"
            f" ({soak.peak_at_s:.1f} s{ceiling}) | {soak.rss_closed_mib:,.0f} | {answered} | {ended}{after}"
            f" | {soak.resets} | {soak.reads}, {soak.read_failures}, {soak.read_p50_ms:,.0f} ms,"
            f" {soak.read_p99_ms:,.0f} ms |"
        )
    return "\n".join(rows)


if __name__ == "__main__":
    import sys
    import tempfile

    with ExitStack() as stack, tempfile.TemporaryDirectory(prefix="zk-unread-") as tmp:
        print(table(measure(Path(tmp) / "unread", PostgresServer(stack), *sys.argv[1:2])))
