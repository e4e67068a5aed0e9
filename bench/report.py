"""The text of docs/benchmarks.md, computed from one invocation's figures."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass

from bench.importing import ImportFigures
from bench.load import CONNECTIONS, DURATION_S, THREADS, WARMUP_S, Figures, Load
from bench.plan import (
    AUTH_ROUNDS,
    BEFORE_AUDIT,
    BEFORE_PER_CALL,
    BEFORE_TOKEN_LIFECYCLE,
    ITEM_ROUNDS,
    LISTED_TOKENS,
    OVERHEAD_ROUNDS,
    ROUNDS,
    SYNC_ROUNDS,
)
from bench.stalled import (
    CLOSE_TIMEOUT_S,
    H2_CONNECTIONS,
    MIXED_CONNECTIONS,
    READING_H1,
    READING_H2,
    SAMPLE_S,
    STALLED,
    STALLED_H1,
    STALLED_H2,
    WARM_WRITES,
    Soak,
)
from bench.stalled import WRITE_S as STALLED_WRITE_S
from bench.stalled import WRITES as STALLED_WRITES
from bench.watching import H2_STREAMS, IDLE_S, IDLE_STREAMS, WATCHERS, WRITE_RATE, WRITES, WatchFigures

TARGET_OVER_NOOP = 0.85
TARGET_RPC_OVER_NOOP = 0.80  # each other unary RPC against the no-op handler's answer of the same size
TARGET_WORKERS = 1.7
TARGET_SIZE = 0.9
TARGET_TAIL = 3.0
TARGET_WRITES = 0.85  # CreateItem and UpdateItem against DeleteItem, on one store
TARGET_LAST_PAGE = 0.9  # the last page of a 1,000,000-item vault against its first
TARGET_AUTH = 0.97  # DeleteItem with last use recorded against the code before it
TARGET_AUDIT = 0.9  # DeleteItem with its audit event against the code before the audit trail
TARGET_METRICS = 0.95  # DeleteItem with metrics recorded against metrics off
TARGET_TRACING_OFF = 0.99  # DeleteItem as served (tracing off) against no instrumentation at all
TARGET_CHANGES_PAGE = 0.9  # ListChanges at the end of 1,000,000 changes and at the start: the slower / the faster
TARGET_STREAM_KIB = 50  # resident memory per idle watch
TARGET_IDLE_CORES = 0.05  # the CPU of 1,000 idle watches, in cores
TARGET_COMMIT_TO_CLIENT_S = 1.0  # p99 of a change's way from its commit to a watcher of another process
# The server's peak per stalled watch over its RSS with them open: room for two of the largest
# messages (48 KiB each) and an idle watch's TARGET_STREAM_KIB. A slow client costs one page
# (docs/api.md), never the backlog of changes it has not read.
TARGET_STALLED_KIB = 150

_STORES = (("memory", "memory"), ("sqlite", "SQLite"), ("postgresql", "PostgreSQL"))
# The unary RPCs besides DeleteItem and MintUserApiToken: the load, its name in the report, and
# the setup of bench/plan.py's per-call-rpcs that serves it.
_OTHER_RPCS = (
    ("create", "CreateItem", "rpcs-writes"),
    ("update", "UpdateItem", "rpcs-writes"),
    ("get", "GetItem", "rpcs-reads"),
    ("list-first", "ListItems (first page)", "rpcs-reads"),
    ("changes-first", "ListChanges (since 0)", "rpcs-reads"),
    ("list-tokens", "ListTokens", "rpcs-reads"),
    ("revoke", "RevokeToken", "rpcs-writes"),
)

_IDLE_NOTE = (
    f"{IDLE_STREAMS:,} WatchChanges streams open on one worker (`zkplatform serve`, SQLite, a vault of 1,000 items),"
    f" Connect with the binary codec: over HTTP/1.1, a connection each; over HTTP/2, {H2_STREAMS} on each"
    " connection (hypercorn's most), cleartext. Every watch live (its first message came). The worker's resident"
    f" set (VmRSS) before opening them, once they are open, and after a window of {IDLE_S} s, two heartbeat periods"
    " (every watch re-checks its token and membership twice), judged on the last; and its CPU time in that window,"
    " as a share of one core (bench/watching.py). Each protocol on a server of its own; run after the loads, alone"
    " on the machine."
)
_LATENCY_NOTE = (
    f"Commit to client: two `zkplatform serve` processes on one store, one serving {WATCHERS} watches of a vault"
    f" and the other taking {WRITES} UpdateItem calls on it at {WRITE_RATE} a second, so every change is made by"
    " another process than the one whose watches must learn of it (SQLite: its poller reads `PRAGMA data_version`"
    " every 0.2 s; PostgreSQL: LISTEN). For each change and watcher, from the writer receiving its answer (the"
    " commit is done) to the watcher receiving the change, matched by sequence. CPU in cores, from the first"
    " write to the last change received: each change wakes every watch, which reads it from the store."
)

_STALLED_NOTE = (
    f"bench/stalled.py: one `zkplatform serve`, one worker, a vault of 1,000 items, and its clients together:"
    f" {READING_H2 + READING_H1} watches that read everything ({READING_H2} over HTTP/2, {READING_H1} over"
    f" HTTP/1.1) and {STALLED} that read their first message and then nothing: {STALLED_H2} HTTP/2 streams on"
    f" {H2_CONNECTIONS} connections whose windows are never refilled ({MIXED_CONNECTIONS} of those connections"
    f" carry the reading HTTP/2 watches too) and {STALLED_H1} HTTP/1.1 connections whose sockets are never read."
    f" Then {STALLED_WRITES} UpdateItem calls over {STALLED_WRITE_S} s, each with a ciphertext of the largest size"
    f" allowed (48 KiB). Resident set (VmRSS) with the reading watches open and {WARM_WRITES} changes passed"
    f" (before), with the stalled ones open too (opened), the largest of its samples every {SAMPLE_S} s (peak, and"
    " when from the first write), once the reading watches had every change (end), and once the stalled clients"
    " had gone (HTTP/2: their streams reset by the client, or their connections closed; HTTP/1.1: closed) and"
    f" their calls had ended (closed; {CLOSE_TIMEOUT_S} s at most). Per stalled watcher: (peak - opened) /"
    f" {STALLED}, judged; all told: (peak - before) / {STALLED}, their first message included. The stall bound is"
    " the server's ZKPLATFORM_CLIENT_STALL_SECONDS."
)
_STALLED_CALLS_NOTE = (
    "Given up: the stalled calls whose access line (told apart by request id) was written while their clients"
    " were still there, with their median duration and their codes (`canceled` meant); resets: the HTTP/2"
    " streams the server reset, as the clients saw; ended once closed: the stalled calls ended by 'closed';"
    " ERROR lines in the server's log over the soak. Commit to client: over the reading watches and every"
    " write, from the writer's answer to the watch receiving the change; server CPU during the writes."
)

_HEADER = """\
# Benchmarks

Generated by `make bench` (bench/run.py): do not edit by hand. Run on {date}, in {minutes:.1f} minutes.

- Machine: {machine}.
- Load: wrk on the same machine, {threads} threads, {connections} connections (HTTP/1.1 keep-alive),
  {warmup} s of warm-up then {duration} s measured per row. DeleteItem deletes a fresh live item per call;
  MintUserApiToken rotates over 500 principals, with the rate limit and the active-token cap on (set high).
  CreateItem creates a new item per call, UpdateItem changes a fresh seeded item per call (from version 1),
  GetItem reads seeded items in turn, ListItems asks for a 100-item page, ListChanges for a 100-change
  page, ListTokens for a 100-token page of the caller's own, RevokeToken revokes a fresh token per call;
  every call answers 200.
- Each setup is a fresh server on a fresh store. The memory-store setups serve bench/apps.py's
  `platform_app()` (the real application, seeded in memory); the SQLite and PostgreSQL setups run
  `zkplatform serve --store URL --workers N` itself, on a store seeded before it starts.
- These machines are shared and noisy (one figure swings by 15% or more from run to run): read the
  ratios. The setups a ratio compares are served side by side and take turns, round by round.
- Each section says what its setups compare and how its figures were taken; the Targets table at the
  end judges the ratios. This page holds the last run's figures only. What earlier runs showed, the
  profiles read and what was changed for them, dated, is written by hand in
  [bench/analysis.md](../bench/analysis.md).
"""


@dataclass(frozen=True, slots=True)
class Inputs:
    figures: dict[tuple[str, Load], Figures]
    peak_rss_mib: dict[str, float]
    machine: str
    minutes: float
    imported: ImportFigures | None = None
    watches: WatchFigures | None = None
    stalled: list[Soak] | None = None


class _Table:
    """A Markdown table: header names starting with "~" are left-aligned text columns."""

    def __init__(self, *header: str) -> None:
        names = [h.removeprefix("~") for h in header]
        aligns = ["---" if h.startswith("~") else "---:" for h in header]
        self.lines = ["| " + " | ".join(names) + " |", "|" + "|".join(aligns) + "|"]

    def row(self, *cells: object) -> None:
        self.lines.append("| " + " | ".join(str(c) for c in cells) + " |")


def _n(value: float | None) -> str:
    return "n/a" if value is None else f"{value:,.0f}"


def _ratio(top: float | None, bottom: float | None) -> float | None:
    return None if top is None or bottom is None else top / bottom


def _ms(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def _x(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}x"


class _Report:
    def __init__(self, inputs: Inputs) -> None:
        self.inputs = inputs
        self.out: list[str] = []
        self.targets = _Table("~target", "measured", "~met")

    def rps(self, key: str, rpc: str, codec: str) -> float | None:
        found = self.inputs.figures.get((key, Load(rpc, codec)))
        return found.rps if found else None

    def judge(self, name: str, value: float | None, meets: Callable[[float], bool], shown: str) -> None:
        verdict = "n/a (not measured)" if value is None else ("met" if meets(value) else "**NOT met**")
        self.targets.row(name, shown, verdict)

    def judge_ratio(self, name: str, value: float | None, minimum: float) -> None:
        self.judge(name, value, lambda v: v >= minimum, _x(value))

    def section(self, title: str, note: str, table: _Table) -> None:
        self.out += [f"## {title}", "", *([note, ""] if note else []), *table.lines, ""]

    def every_run(self) -> None:
        table = _Table(
            "~setup", "~call", "requests/s", "p50 ms", "p99 ms", "errors", "server CPU", "server us/call",
            "machine CPU", "stolen",
        )  # fmt: skip
        for (key, load), fig in self.inputs.figures.items():
            call = f"{load.rpc} {load.codec}" + (" at half peak" if load.half else "")
            table.row(
                key, call, _n(fig.rps), f"{fig.p50_ms:.2f}", f"{fig.p99_ms:.2f}", fig.errors,
                f"{fig.server_cores:.2f}", _n(fig.server_cores / fig.rps * 1e6 if fig.rps else None),
                f"{fig.machine_cores:.2f}", f"{fig.stolen_cores:.2f}",
            )  # fmt: skip
        note = (
            "CPU in cores, over the measured run (the median round's): the server's processes; the whole"
            " machine (server, wrk, PostgreSQL, anything else); and what the hypervisor gave to other"
            " machines meanwhile (stolen). A machine near its core count had no CPU left to give."
            " Server us/call is the server's CPU time per answered call. A setup of one server process"
            " and no database runs on a core of its own, wrk on the others (bench/servers.py: Cores):"
            " its calls per second then follow its CPU cost per call."
        )
        self.section("Every run", note, table)

    def overhead(self) -> None:
        table = _Table("~call", "raw ASGI", "no-op Connect", "zkplatform", "zkplatform / no-op", "no-op / raw")
        for rpc in ("delete", "mint"):
            for codec in ("json", "proto"):
                raw, noop = self.rps("raw", "delete", codec), self.rps("noop", rpc, codec)
                ours = self.rps("memory", rpc, codec)
                table.row(f"{rpc} {codec}", _n(raw), _n(noop), _n(ours), _x(_ratio(ours, noop)), _x(_ratio(noop, raw)))
                self._judge_over_noop(rpc, codec, _ratio(ours, noop))
        note = (
            "hypercorn, one worker; zkplatform on the memory store (vaults of 1,000 items). The three servers"
            f" run side by side and take turns, {OVERHEAD_ROUNDS} rounds of each call; each figure is the"
            " median round."
        )
        self.section("Overhead: our app against a no-op Connect handler and a raw ASGI handler", note, table)

    def _judge_over_noop(self, rpc: str, codec: str, ratio: float | None, group: str = "") -> None:
        name = "DeleteItem" if rpc == "delete" else "MintUserApiToken"
        self.judge_ratio(
            f"{name} ({codec}) >= {TARGET_OVER_NOOP}x the no-op Connect handler{group}", ratio, TARGET_OVER_NOOP
        )

    def per_call(self) -> None:
        table = _Table(
            "~call", "no-op Connect", f"before ({BEFORE_PER_CALL})", "this code", "checks, fixed answers",
            "before / no-op", "now / no-op", "checks / no-op",
        )  # fmt: skip
        for rpc in ("delete", "mint"):
            for codec in ("json", "proto"):
                noop, before = self.rps("per-call-noop", rpc, codec), self.rps("per-call-before", rpc, codec)
                now, checks = self.rps("per-call", rpc, codec), self.rps("per-call-checks", rpc, codec)
                if noop is None:
                    continue
                table.row(
                    f"{rpc} {codec}", _n(noop), _n(before), _n(now), _n(checks),
                    _x(_ratio(before, noop)), _x(_ratio(now, noop)), _x(_ratio(checks, noop)),
                )  # fmt: skip
                self._judge_over_noop(rpc, codec, _ratio(now, noop), " (per-call group)")
        note = (
            "hypercorn, one worker, the memory store: the no-op Connect handler, this code, the code of commit"
            f" {BEFORE_PER_CALL} (before the HTTP front was rebuilt, bench/analysis.md), and this"
            " code's layers and checks (the front's middlewares, the call record, authentication, the field"
            " rules, a mint's rate count) in front of the no-op handler's servicers, which answer with its"
            " fixed messages: the most that tuning the layers could reach, before any use case runs. Side by side,"
            f" {OVERHEAD_ROUNDS} rounds of each call; each figure is the median round."
        )
        if len(table.lines) > 2:  # more than its header and rule: something was measured
            self.section("Per-call cost: this code and the code before it, against the no-op handler", note, table)

    def per_call_rpcs(self) -> None:
        table = _Table("~call", "no-op Connect", "zkplatform", "zkplatform / no-op")
        for rpc, name, key in _OTHER_RPCS:
            noop, ours = self.rps("rpcs-noop", rpc, "json"), self.rps(key, rpc, "json")
            table.row(f"{name} json", _n(noop), _n(ours), _x(_ratio(ours, noop)))
            self.judge_ratio(
                f"{name.split()[0]} (json) >= {TARGET_RPC_OVER_NOOP:.2f}x the no-op Connect handler",
                _ratio(ours, noop),
                TARGET_RPC_OVER_NOOP,
            )
        note = (
            "hypercorn, one worker. The no-op Connect handler answers each call with a fixed message of the"
            " shape and size of the app's answer (bench/answers.py). The app on the memory store, on two"
            " servers: the writes on vaults of 1,000 items; the reads on one vault of 1,000 items and the"
            f" owner's {LISTED_TOKENS + 1} tokens. CreateItem and UpdateItem as in the items section, GetItem of the"
            " vault's items in turn; ListItems and ListChanges their first 100-item (100-change) page;"
            " ListTokens the first 100 of the caller's own tokens; RevokeToken a fresh token of the caller's"
            " principal per call. Side by"
            f" side, taking turns for {OVERHEAD_ROUNDS} rounds of each call; each figure the median round."
        )
        if any(self.rps("rpcs-noop", rpc, "json") is not None for rpc, _, _ in _OTHER_RPCS):
            self.section("Per-call cost of the other RPCs", note, table)

    def stores(self) -> None:
        table = _Table("~call", "memory", "SQLite", "PostgreSQL", "SQLite / memory", "PostgreSQL / memory")
        for rpc, codec in (("delete", "json"), ("delete", "proto"), ("mint", "json")):
            memory, sqlite, postgres = (self.rps(k, rpc, codec) for k in ("memory", "sqlite", "postgresql"))
            table.row(
                f"{rpc} {codec}", _n(memory), _n(sqlite), _n(postgres),
                _x(_ratio(sqlite, memory)), _x(_ratio(postgres, memory)),
            )  # fmt: skip
        self.section("Stores", "hypercorn, one worker, vaults of 1,000 items.", table)

    def workers(self) -> None:
        table = _Table("~store", "~call", "1 worker", "2 workers", "2 / 1")
        for store, label in (("sqlite", "SQLite"), ("postgresql", "PostgreSQL")):
            for rpc, codec in (("delete", "json"), ("delete", "proto"), ("mint", "json")):
                one, two = self.rps(store, rpc, codec), self.rps(f"{store}-2w", rpc, codec)
                table.row(label, f"{rpc} {codec}", _n(one), _n(two), _x(_ratio(two, one)))
                if (rpc, codec) == ("delete", "json"):
                    self.judge_ratio(
                        f"2 workers >= {TARGET_WORKERS}x one worker ({label}, DeleteItem json)",
                        _ratio(two, one),
                        TARGET_WORKERS,
                    )
        note = "`zkplatform serve --workers N` on hypercorn, vaults of 1,000 items; served side by side, in rounds."
        self.section("Workers: 2 against 1", note, table)

    def store_size(self) -> None:
        table = _Table("~store", "1,000-item vaults", "1,000,000-item vault", "1M / 1k")
        for store, label in (("memory", "memory"), ("sqlite", "SQLite")):
            small_key = "memory-1k" if store == "memory" else store  # served beside the 1M setup
            small, big = self.rps(small_key, "delete", "json"), self.rps(f"{store}-1m", "delete", "json")
            table.row(label, _n(small), _n(big), _x(_ratio(big, small)))
            self.judge_ratio(
                f"DeleteItem on 1,000,000 items within 10% of 1,000 ({label})", _ratio(big, small), TARGET_SIZE
            )
        note = "DeleteItem json, one worker; each pair served side by side, in rounds."
        self.section("Store size: a vault of 1,000,000 items against vaults of 1,000", note, table)

    def items(self) -> None:
        table = _Table(
            "~store", "DeleteItem", "CreateItem", "UpdateItem", "GetItem", "create / delete", "update / delete",
            "get / delete",
        )  # fmt: skip
        for store, label in _STORES:
            key = f"items-{store}"
            delete, create, update, get = (self.rps(key, rpc, "json") for rpc in ("delete", "create", "update", "get"))
            table.row(
                label, _n(delete), _n(create), _n(update), _n(get),
                _x(_ratio(create, delete)), _x(_ratio(update, delete)), _x(_ratio(get, delete)),
            )  # fmt: skip
            for rpc, value in (("CreateItem", create), ("UpdateItem", update)):
                self.judge_ratio(
                    f"{rpc} >= {TARGET_WRITES}x DeleteItem ({label}, json)", _ratio(value, delete), TARGET_WRITES
                )
        note = (
            "JSON, one worker, vaults of 1,000 items; each store's four calls on one server, taking turns round"
            f" by round with the other stores' ({ITEM_ROUNDS} rounds); each figure the median round."
        )
        self.section("Items: CreateItem, UpdateItem and GetItem against DeleteItem", note, table)

    def listing(self) -> None:
        table = _Table("~store", "~vault", "first page", "last page", "last / first")
        for store, label in _STORES[1:]:
            for size, vault in (("1k", "1,000 items"), ("1m", "1,000,000 items")):
                key = f"list-{store}-{size}"
                first, last = self.rps(key, "list-first", "json"), self.rps(key, "list-last", "json")
                table.row(label, vault, _n(first), _n(last), _x(_ratio(last, first)))
                if size == "1m":
                    self.judge_ratio(
                        f"ListItems: the last page within 10% of the first, 1,000,000 items ({label})",
                        _ratio(last, first),
                        TARGET_LAST_PAGE,
                    )
        note = (
            "A 100-item page, JSON, one worker, requests per second. The last page's token comes from paging"
            " through the vault once before the load (bench/pages.py). The four setups of a store are served"
            f" side by side, in {ROUNDS} rounds (with two, each figure is the lower). Not on the memory store,"
            " which is for development and tests."
        )
        self.section("ListItems: the first page against the last", note, table)

    def sync(self) -> None:
        pages = _Table("~store", "since 0", "since sequence - 100", "end / start", "p50 ms start", "p50 ms end")
        for store, label in _STORES[1:]:
            key = f"changes-{store}"
            start, end = (
                self.inputs.figures.get((key, Load(rpc, "json"))) for rpc in ("changes-first", "changes-last")
            )
            ratio = _ratio(end.rps, start.rps) if start is not None and end is not None else None
            pages.row(
                label, _n(start.rps if start else None), _n(end.rps if end else None), _x(ratio),
                _ms(start.p50_ms if start else None), _ms(end.p50_ms if end else None),
            )  # fmt: skip
            self.judge(
                f"ListChanges: the page at the end of 1,000,000 changes within 10% of the start ({label})",
                ratio,
                lambda v: min(v, 1 / v) >= TARGET_CHANGES_PAGE,
                _x(ratio),
            )
        note = (
            "A 100-change page, JSON, one worker, requests per second: from the start of a vault of 1,000,000"
            " changes (since 0) and from its end (since its sequence less 100, which answers its last 100"
            f" changes). Both pages on one server per store, the two stores side by side, in {SYNC_ROUNDS}"
            " rounds; each figure the median round. Judged both ways: the slower page at least"
            f" {TARGET_CHANGES_PAGE}x the faster."
        )
        self.section("Sync: ListChanges and WatchChanges", note, pages)
        self._watches()

    def _watches(self) -> None:
        table = _Table(
            "~protocol", "connections", "RSS before MiB", "once open", "after the window", "KiB per watch once open",
            "KiB per watch after", "window s", "idle CPU",
        )  # fmt: skip
        for protocol in ("HTTP/1.1", "HTTP/2"):
            idle = self.inputs.watches.idle.get(protocol) if self.inputs.watches is not None else None
            kib = cores = None
            if idle is None:
                table.row(protocol, *["n/a"] * 8)
            else:
                kib, cores = idle.kib_per_stream(idle.rss_after_mib), idle.cores
                table.row(
                    protocol, f"{idle.connections:,}", f"{idle.rss_before_mib:,.1f}", f"{idle.rss_opened_mib:,.1f}",
                    f"{idle.rss_after_mib:,.1f}", f"{idle.kib_per_stream(idle.rss_opened_mib):.1f}", f"{kib:.1f}",
                    f"{idle.seconds:.0f}", f"{cores:.1%} of a core",
                )  # fmt: skip
            self.judge(
                f"Memory per idle watch < {TARGET_STREAM_KIB} KiB ({IDLE_STREAMS:,} on one worker, SQLite, {protocol})",
                kib,
                lambda v: v < TARGET_STREAM_KIB,
                "n/a" if kib is None else f"{kib:.1f} KiB",
            )
            self.judge(
                f"CPU of {IDLE_STREAMS:,} idle watches < {TARGET_IDLE_CORES:.0%} of a core (SQLite, {protocol})",
                cores,
                lambda v: v < TARGET_IDLE_CORES,
                "n/a" if cores is None else f"{cores:.1%}",
            )
        self.out += [_IDLE_NOTE, "", *table.lines, "", _LATENCY_NOTE, "", *self._latency().lines, ""]

    def _latency(self) -> _Table:
        table = _Table(
            "~store", "changes x watchers", "p50 ms", "p99 ms", "max ms", "missing", "watches' server CPU",
            "writer's server CPU",
        )  # fmt: skip
        for store, label in _STORES[1:]:
            found = self.inputs.watches.latency.get(store) if self.inputs.watches is not None else None
            if found is None:
                table.row(label, *["n/a"] * 7)
                shown = "n/a"
            else:
                table.row(
                    label, f"{found.samples:,}", f"{found.p50_s * 1000:,.0f}", f"{found.p99_s * 1000:,.0f}",
                    f"{found.max_s * 1000:,.0f}", found.missing, f"{found.watched_cores:.2f}",
                    f"{found.written_cores:.2f}",
                )  # fmt: skip
                shown = f"{found.p99_s * 1000:,.0f} ms" + (f", {found.missing} missing" if found.missing else "")
            self.judge(
                f"WatchChanges: commit to client p99 < {TARGET_COMMIT_TO_CLIENT_S:.0f} s, another process ({label})",
                None if found is None else found.p99_s + (float("inf") if found.missing else 0),
                lambda v: v < TARGET_COMMIT_TO_CLIENT_S,
                shown,
            )
        return table

    def stalled(self) -> None:
        memory = _Table(
            "~store", "~stall bound", "RSS before MiB", "opened", "peak", "peak at s", "end", "closed",
            "KiB per stalled watcher", "all told",
        )  # fmt: skip
        calls = _Table(
            "~store", "~stall bound", "~given up: HTTP/2", "~HTTP/1.1", "~codes", "resets", "ended once closed",
            "ERROR lines", "changes x reading watches", "missing", "p50 ms", "p99 ms", "server CPU",
        )  # fmt: skip
        for soak in self.inputs.stalled or ():
            label = dict(_STORES)[soak.store]
            bound = f"{soak.stall_s} s" + (" (default)" if soak.stall_default else "")
            memory.row(
                label, bound, f"{soak.rss_before_mib:,.1f}", f"{soak.rss_opened_mib:,.1f}", f"{soak.rss_peak_mib:,.1f}",
                f"{soak.peak_at_s:.0f}", f"{soak.rss_end_mib:,.1f}", f"{soak.rss_closed_mib:,.1f}",
                f"{soak.kib_per_stalled:,.1f}", f"{soak.kib_per_stalled_all_told:,.1f}",
            )  # fmt: skip
            h2, h1 = soak.given_up["HTTP/2"], soak.given_up["HTTP/1.1"]
            codes = {code: h2.codes.get(code, 0) + h1.codes.get(code, 0) for code in h2.codes | h1.codes}
            calls.row(
                label, bound, _given_up(h2.calls, STALLED_H2, h2.after_s), _given_up(h1.calls, STALLED_H1, h1.after_s),
                ", ".join(f"{code} {count}" for code, count in sorted(codes.items())) or "-", soak.h2_resets,
                f"{soak.ended_after_close} of {STALLED}", soak.errors_logged, f"{soak.samples:,}", soak.missing,
                f"{soak.p50_s * 1000:,.0f}", f"{soak.p99_s * 1000:,.0f}", f"{soak.server_cores:.2f}",
            )  # fmt: skip
            where = f"{label}, stall bound {soak.stall_s} s" + (", the default" if soak.stall_default else "")
            self.judge(
                f"Memory per stalled watcher < {TARGET_STALLED_KIB} KiB ({where})",
                soak.kib_per_stalled,
                lambda v: v < TARGET_STALLED_KIB,
                f"{soak.kib_per_stalled:,.1f} KiB",
            )
            given_up, canceled = h2.calls + h1.calls, codes.get("canceled", 0)
            self.judge(
                f"Every stalled watcher given up within the soak ({where})",
                given_up,
                lambda v: v == STALLED,
                f"{given_up} of {STALLED}",
            )
            self.judge(
                f"Given up as `canceled`, with no ERROR line in the log ({where})",
                float(canceled == given_up and soak.errors_logged == 0),
                lambda v: v == 1,
                f"{canceled} of {given_up} canceled, {soak.errors_logged} ERROR lines",
            )
            late = soak.p99_s + (float("inf") if soak.missing or soak.reading_ended else 0)
            self.judge(
                f"Reading watches beside stalled ones: every change, p99 < {TARGET_COMMIT_TO_CLIENT_S:.0f} s ({where})",
                late,
                lambda v: v < TARGET_COMMIT_TO_CLIENT_S,
                f"{soak.p99_s * 1000:,.0f} ms, {soak.missing} missing, {soak.reading_ended} ended",
            )
        if self.inputs.stalled:
            self.section("Stalled watchers beside reading ones", _STALLED_NOTE, memory)
            self.out += [_STALLED_CALLS_NOTE, "", *calls.lines, ""]

    def authentication(self) -> None:
        table = _Table("~store", f"before ({BEFORE_TOKEN_LIFECYCLE})", "now", "now / before")
        for store, label in _STORES[:2]:
            before, now = (
                self.rps(f"auth-{store}-before", "delete", "json"),
                self.rps(f"auth-{store}", "delete", "json"),
            )
            table.row(label, _n(before), _n(now), _x(_ratio(now, before)))
            self.judge_ratio(
                f"DeleteItem within 3% of the code before last use was recorded ({label})",
                _ratio(now, before),
                TARGET_AUTH,
            )
        note = (
            f"DeleteItem json, one worker: this code, which records a token's last use (a write at most once a"
            f" minute per token), against commit {BEFORE_TOKEN_LIFECYCLE}, the code before it (a git worktree"
            " under build/, its store seeded by its own code). Both served side by side, taking turns for"
            f" {AUTH_ROUNDS} rounds; each figure the median round."
        )
        self.section("Authentication: recording the last use keeps it a read", note, table)

    def audit(self) -> None:
        table = _Table("~store", f"before ({BEFORE_AUDIT})", "audited", "audited / before")
        for store, label in (("sqlite", "SQLite"), ("postgresql", "PostgreSQL")):
            before, now = (
                self.rps(f"audit-{store}-before", "delete", "json"),
                self.rps(f"audit-{store}", "delete", "json"),
            )
            table.row(label, _n(before), _n(now), _x(_ratio(now, before)))
            self.judge_ratio(
                f"DeleteItem with audit within 10% of the code before it ({label})", _ratio(now, before), TARGET_AUDIT
            )
        note = (
            "DeleteItem json, one worker: this code, which appends an audit event to the tenant's hash chain in"
            f" each delete's transaction, against commit {BEFORE_AUDIT}, the code before the audit trail (a git"
            f" worktree under build/, its store seeded by its own code); side by side, {AUTH_ROUNDS} rounds, each"
            " figure the median round. Every delete of the load is in one tenant, so its chain orders them all."
        )
        self.section("Audit: DeleteItem with its event in the same transaction", note, table)

    def observability(self) -> None:
        table = _Table("~codec", "no instrumentation", "off (as served)", "metrics on", "off / none", "on / off")
        for codec in ("json", "proto"):
            none, off, on = (self.rps(f"obs-{key}", "delete", codec) for key in ("none", "off", "metrics"))
            table.row(codec, _n(none), _n(off), _n(on), _x(_ratio(off, none)), _x(_ratio(on, off)))
            self.judge_ratio(f"DeleteItem with metrics within 5% of without ({codec})", _ratio(on, off), TARGET_METRICS)
            self.judge_ratio(
                f"DeleteItem with tracing off within 1% of no instrumentation ({codec})",
                _ratio(off, none),
                TARGET_TRACING_OFF,
            )
        note = (
            "DeleteItem, one worker, memory store, the same code served three ways side by side: as `serve`"
            " runs it without --metrics-bind or OTEL_* (metrics and tracing off), with every metric recorded,"
            " and with no metrics, tracing or interceptor of theirs at all (bench/apps.py);"
            f" {AUTH_ROUNDS} rounds, each figure the median round. None writes an access line (hypercorn"
            " serving bench.apps configures no logging). With tracing off the app mounts no interceptor of"
            " its own for observing (the call's record is written by the error mapping, rpc/errors.py), so"
            " 'as served' and 'no instrumentation' run the same code per call: their ratio is the"
            " harness's noise between two identical servers."
        )
        self.section("Observability: metrics on, and tracing off", note, table)

    def last_use(self) -> None:
        table = _Table("~store", "last use not recorded", "recorded", "recorded / not")
        off, on = self.rps("last-use-off", "delete", "json"), self.rps("last-use-on", "delete", "json")
        table.row("memory", _n(off), _n(on), _x(_ratio(on, off)))
        self.judge_ratio(
            "DeleteItem recording last use within 3% of not recording it (memory)", _ratio(on, off), TARGET_AUTH
        )
        note = (
            "DeleteItem json, one worker, the same code served twice side by side: as it is, and with a store"
            f" whose touch_token does nothing (bench/apps.py); {AUTH_ROUNDS} rounds, each figure the median round."
            " This isolates the last-use write, which the comparison with an older commit above mixes with"
            " every other change since (the access line, metrics, request ids)."
        )
        self.section("Authentication: the last-use write alone", note, table)

    def servers(self) -> None:
        table = _Table("~call", "hypercorn", "uvicorn", "uvicorn / hypercorn")
        for codec in ("json", "proto"):
            hyper, uvi = self.rps("memory", "delete", codec), self.rps("uvicorn", "delete", codec)
            table.row(f"delete {codec}", _n(hyper), _n(uvi), _x(_ratio(uvi, hyper)))
        note = (
            "The same app on the memory store, one worker; uvicorn with uvloop and httptools. uvicorn serves"
            " Connect and gRPC-Web but not gRPC (no HTTP/2 trailers): the price of its speed."
        )
        self.section("Servers: hypercorn against uvicorn (Connect protocol)", note, table)

    def half_peak(self) -> None:
        table = _Table("~setup", "~call", "peak req/s", "paced req/s", "of peak", "p50 ms", "p99 ms", "p99 / p50")
        for (key, load), fig in self.inputs.figures.items():
            if not load.half:
                continue
            peak = self.inputs.figures[(key, Load(load.rpc, load.codec))].rps
            spread = fig.p99_ms / fig.p50_ms if fig.p50_ms else float("inf")
            table.row(
                key, f"{load.rpc} {load.codec}", _n(peak), _n(fig.rps), f"{fig.rps / peak:.0%}",
                f"{fig.p50_ms:.2f}", f"{fig.p99_ms:.2f}", f"{spread:.1f}x",
            )  # fmt: skip
            name = f"p99 < {TARGET_TAIL:.0f}x p50 at half of the peak ({key}, {load.rpc} {load.codec})"
            self.judge(name, spread, lambda v: v < TARGET_TAIL, f"{spread:.1f}x")
        note = (
            "Each connection calls at a fixed interval, the connections staggered evenly (as wrk2 -R paces),"
            " for about half of the setup's peak above. wrk still waits for an answer before a connection's"
            " next call, so a stall delays the calls behind it rather than counting against them: these p99s"
            " are lower bounds."
        )
        self.section("Latency at half of the peak throughput", note, table)

    def memory(self) -> None:
        table = _Table("~setup", "peak RSS MiB")
        for key, mib in self.inputs.peak_rss_mib.items():
            table.row(key, f"{mib:,.0f}")
        self.section("Memory", "Peak resident set of the busiest server process, after its runs.", table)

    def importing(self) -> None:
        table = _Table("lines", "file MiB", "seconds", "lines/s", "peak RSS MiB")
        if (imported := self.inputs.imported) is not None:
            table.row(
                f"{imported.lines:,}", f"{imported.file_mib:,.0f}", f"{imported.seconds:.1f}",
                _n(imported.lines_per_second), f"{imported.peak_rss_mib:,.0f}",
            )  # fmt: skip
        else:
            table.row(*["n/a"] * 5)
        note = (
            "`zkplatform admin import FILE` (bench/importing.py) into a fresh SQLite file, run alone after the"
            " loads: every line checked, then all stored in one transaction. Peak RSS of that process."
        )
        self.section("Import: NDJSON items into SQLite", note, table)


def _given_up(calls: int, of: int, after_s: float | None) -> str:
    return f"{calls} of {of}" + ("" if after_s is None else f", after {after_s:.1f} s")


def render(inputs: Inputs) -> str:
    report = _Report(inputs)
    header = _HEADER.format(
        date=f"{dt.datetime.now(dt.UTC):%Y-%m-%d}",
        minutes=inputs.minutes,
        machine=inputs.machine,
        threads=THREADS,
        connections=CONNECTIONS,
        warmup=WARMUP_S,
        duration=DURATION_S,
    )
    report.out.append(header)
    for section in (
        report.every_run, report.overhead, report.per_call, report.per_call_rpcs, report.stores, report.workers,
        report.store_size, report.items, report.listing, report.sync, report.stalled, report.authentication,
        report.audit,
        report.observability, report.last_use,
        report.servers, report.half_peak, report.memory, report.importing,
    ):  # fmt: skip
        section()
    report.section("Targets", "", report.targets)
    return "\n".join(report.out)
