"""What `make bench` measures: the setups (a server, an app, a store) and the loads on each.

Setups in one group are served at the same time and their loads interleaved
round by round (A B C A B C ...), each figure the median of its rounds (with
two rounds, the lower): every ratio a target judges compares figures taken
seconds apart, not minutes, on a machine whose speed drifts. A round runs every
peak load of the group once on every setup (delete, create, delete, create, ...),
so that loads compared on one server are taken seconds apart too.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from bench.load import DURATION_S, WARMUP_S, Load
from bench.seed import MINTERS, Layout

THOUSAND, MILLION = 1_000, 1_000_000
OVERHEAD_ROUNDS = 3  # the overhead target is the closest call: more rounds
ROUNDS = 2
ITEM_ROUNDS = 3  # create and update against delete on one server: a ratio judged at 0.85
SYNC_ROUNDS = 3  # ListChanges at the start of a vault against its end: a ratio judged at 0.9
AUTH_ROUNDS = 5  # this code against the code before it: a ratio judged at 0.97, the closest of all
# The code before the token lifecycle (last use written at most once a minute): served beside
# the working tree's to show that authentication stays a read.
BEFORE_TOKEN_LIFECYCLE = "c2d7c9e"  # noqa: S105 # a commit, not a secret
# The code before the audit trail: served beside the working tree's to show what auditing costs.
BEFORE_AUDIT = "8890b82"
# Items a delete load may use per second, by store: more than any server here reaches, so
# every call finds a fresh item (a run that ran out would show not_found errors).
ITEM_RATE = {"memory": 8_000, "sqlite": 4_000, "postgresql": 4_000}
# Tokens a revoke load may use per second, as ITEM_RATE for items (a run that ran out would show
# not_found errors); the memory store only, where a token costs about 1 KiB and 25 us to seed.
REVOKE_RATE = {"memory": 5_000}
# The owner's tokens besides the one the loads present, where ListTokens lists them: a full
# 100-token page, and a next one.
LISTED_TOKENS = 100
# The code before the HTTP front was rebuilt as middlewares and interceptors (issue 27):
# served beside the working tree's and the no-op handler, so that the ratios before and after come
# from one run.
BEFORE_PER_CALL = "1f238e9"
BENCH_APPS = {
    "raw": "bench.noop:raw_app",
    "noop": "bench.noop:noop_app()",
    "zkplatform": "bench.apps:platform_app()",
    "zkplatform-no-last-use": "bench.apps:platform_app(record_last_use=False)",
    "zkplatform-metrics": "bench.apps:platform_app(metrics=True)",
    "zkplatform-uninstrumented": "bench.apps:platform_app(instrumented=False)",
    "zkplatform-fixed-answers": "bench.apps:platform_app(servicers=False)",
}


@dataclass(frozen=True, slots=True)
class Setup:
    key: str
    server: str  # "hypercorn" or "uvicorn"
    app: str  # "raw", "noop" or "zkplatform"
    store: str  # "", "memory", "sqlite" or "postgresql"
    workers: int
    vault_size: int
    loads: tuple[Load, ...]
    rounds: int = 1
    code: str = ""  # a commit whose code this setup serves (bench/other_commits.py); "" for the working tree's

    @property
    def pinned(self) -> bool:
        """One server process and no database server: it gets a core of its own, wrk the others
        (bench/servers.py: Cores). Several workers, or a database's processes, need the cores shared."""
        return self.workers == 1 and self.store in ("", "memory")

    @property
    def layout(self) -> Layout:
        # Deletes and updates each change a fresh seeded item per call, revokes a fresh token.
        items = self._seconds(FRESH_ITEM_RPCS) * ITEM_RATE.get(self.store, 0)
        revoked = self._seconds(("revoke",)) * REVOKE_RATE.get(self.store, 0)
        # Where ListTokens is measured, the owner holds a full page of tokens more, and no minter is seeded.
        listing = any(load.rpc == "list-tokens" for load in self.loads)
        return Layout(
            vault_size=self.vault_size,
            items=max(self.vault_size, items),
            minters=0 if listing else MINTERS,
            own_tokens=revoked + (LISTED_TOKENS if listing else 0),
        )

    def _seconds(self, rpcs: tuple[str, ...]) -> int:
        """How long the loads of these RPCs run on this setup, warm-ups included."""
        return sum(self.rounds * DURATION_S + WARMUP_S if not load.half else DURATION_S + WARMUP_S
                   for load in self.loads if load.rpc in rpcs)  # fmt: skip

    def command(self, store_url: str) -> list[str]:
        """The server's command line; {port} stands for the port it is given."""
        if self.server == "uvicorn":
            return [
                sys.executable, "-m", "uvicorn", "--factory", "bench.apps:platform_app", "--host", "127.0.0.1",
                "--port", "{port}", "--workers", str(self.workers), "--no-access-log", "--log-level", "warning",
            ]  # fmt: skip
        if self.store in ("sqlite", "postgresql"):  # the real command line, as operators run it
            zkplatform = str(Path(sys.executable).parent / "zkplatform")
            return [
                zkplatform,
                "serve",
                "--bind",
                "127.0.0.1:{port}",
                "--store",
                store_url,
                "--workers",
                str(self.workers),
            ]
        return [
            sys.executable, "-m", "hypercorn", "--bind", "127.0.0.1:{port}", "--workers", str(self.workers),
            BENCH_APPS[self.app],
        ]  # fmt: skip


def _loads(*calls: str, half: tuple[str, ...] = ()) -> tuple[Load, ...]:
    """Loads from "rpc codec" names; `half` ones run paced at half of the same call's peak, after the peaks."""

    def load(call: str, *, half: bool) -> Load:
        rpc, codec = call.split()
        return Load(rpc, codec, half=half)

    return (*(load(call, half=False) for call in calls), *(load(call, half=True) for call in half))


FRESH_ITEM_RPCS = ("delete", "update")
EVERY_CALL = ("delete json", "delete proto", "mint json", "mint proto")
DURABLE = ("delete json", "delete proto", "mint json")
_HALF = ("delete json", "delete proto")


ITEM_CALLS = ("delete json", "create json", "update json", "get json")
LIST_CALLS = ("list-first json", "list-last json")
CHANGES_CALLS = ("changes-first json", "changes-last json")


def _zk(  # noqa: PLR0913 # one keyword per dimension the plan varies
    key: str, store: str, loads: tuple[Load, ...], *, rounds: int = ROUNDS, workers: int = 1,
    vault_size: int = THOUSAND, server: str = "hypercorn", code: str = "",
) -> Setup:  # fmt: skip
    return Setup(key, server, "zkplatform", store, workers, vault_size, loads, rounds, code)


# Groups that `BENCH_ONLY=<name>` runs alone (besides any setup named by its key).
NAMED: dict[str, tuple[Setup, ...]] = {
    # CreateItem, UpdateItem and GetItem against DeleteItem, each on one server per store.
    "items": tuple(
        _zk(f"items-{store}", store, _loads(*ITEM_CALLS), rounds=ITEM_ROUNDS)
        for store in ("memory", "sqlite", "postgresql")
    ),
    # A 100-item page of ListItems: the first against the last, on a vault of 1,000 and one of
    # 1,000,000. Not on the memory store: it is for development and tests, and a million items
    # held in one process measure its heap rather than a page.
    "list": tuple(
        _zk(f"list-{store}-{size}", store, _loads(*LIST_CALLS), vault_size=items)
        for store in ("sqlite", "postgresql")
        for size, items in (("1k", THOUSAND), ("1m", MILLION))
    ),
    # A 100-change page of ListChanges: from the start of a vault of 1,000,000 changes (since 0)
    # against its end (its sequence less 100), on each durable store. The watches' figures
    # (bench/watching.py) run after the loads, alone on the machine, with this group.
    "sync": tuple(
        _zk(f"changes-{store}", store, _loads(*CHANGES_CALLS), rounds=SYNC_ROUNDS, vault_size=MILLION)
        for store in ("sqlite", "postgresql")
    ),
    # DeleteItem on this code against the code before the token lifecycle, side by side.
    "auth": tuple(
        _zk(f"auth-{store}{suffix}", store, _loads("delete json"), rounds=AUTH_ROUNDS, code=code)
        for store in ("memory", "sqlite")
        for suffix, code in (("", ""), ("-before", BEFORE_TOKEN_LIFECYCLE))
    ),
    # DeleteItem with its audit event against the code before the audit trail, side by side.
    "audit": tuple(
        _zk(f"audit-{store}{suffix}", store, _loads("delete json"), rounds=AUTH_ROUNDS, code=code)
        for store in ("sqlite", "postgresql")
        for suffix, code in (("", ""), ("-before", BEFORE_AUDIT))
    ),
    # What observing calls costs: the app as served (metrics and tracing off), with metrics
    # recorded, and with no instrumentation at all; the same code, side by side.
    "observability": tuple(
        Setup(key, "hypercorn", app, "memory", 1, THOUSAND, _loads("delete json", "delete proto"), AUTH_ROUNDS)
        for key, app in (
            ("obs-off", "zkplatform"),
            ("obs-metrics", "zkplatform-metrics"),
            ("obs-none", "zkplatform-uninstrumented"),
        )
    ),
    # The same code with and without recording tokens' last use: what that write costs alone,
    # which the comparison with an older commit cannot tell apart from everything else since.
    "last-use": (
        _zk("last-use-on", "memory", _loads("delete json"), rounds=AUTH_ROUNDS),
        Setup(
            "last-use-off",
            "hypercorn",
            "zkplatform-no-last-use",
            "memory",
            1,
            THOUSAND,
            _loads("delete json"),
            AUTH_ROUNDS,
        ),
    ),
}


NAMED["per-call"] = (
    Setup("per-call-noop", "hypercorn", "noop", "", 1, THOUSAND, _loads(*EVERY_CALL), OVERHEAD_ROUNDS),
    _zk("per-call", "memory", _loads(*EVERY_CALL), rounds=OVERHEAD_ROUNDS),
    _zk("per-call-before", "memory", _loads(*EVERY_CALL), rounds=OVERHEAD_ROUNDS, code=BEFORE_PER_CALL),
    # Every layer and check of the app in front of the no-op handler's fixed answers: the
    # ceiling that tuning the layers can reach, measured beside the app in every run.
    Setup(
        "per-call-checks",
        "hypercorn",
        "zkplatform-fixed-answers",
        "memory",
        1,
        THOUSAND,
        _loads(*EVERY_CALL),
        OVERHEAD_ROUNDS,
    ),
)


# The other unary RPCs against the no-op handler, which answers each with a message of the real
# answer's shape and size (bench/answers.py). The real app on two servers: the reads on a store of
# one vault of 1,000 items and a page of the owner's tokens; the writes on vaults of 1,000 items, as
# many as their loads use, and as many of the owner's tokens as the revokes use.
RPC_READS = ("get json", "list-first json", "changes-first json", "list-tokens json")
RPC_WRITES = ("create json", "update json", "revoke json")
NAMED["per-call-rpcs"] = (
    Setup("rpcs-noop", "hypercorn", "noop", "", 1, THOUSAND, _loads(*RPC_WRITES, *RPC_READS), OVERHEAD_ROUNDS),
    _zk("rpcs-writes", "memory", _loads(*RPC_WRITES), rounds=OVERHEAD_ROUNDS),
    _zk("rpcs-reads", "memory", _loads(*RPC_READS), rounds=OVERHEAD_ROUNDS),
)


# Each group is one comparison, its setups served side by side and interleaved.
PLAN: tuple[tuple[Setup, ...], ...] = (
    (  # our overhead, and the other ASGI server
        Setup("raw", "hypercorn", "raw", "", 1, THOUSAND, _loads("delete json", "delete proto"), OVERHEAD_ROUNDS),
        Setup("noop", "hypercorn", "noop", "", 1, THOUSAND, _loads(*EVERY_CALL), OVERHEAD_ROUNDS),
        _zk("memory", "memory", _loads(*EVERY_CALL, half=_HALF), rounds=OVERHEAD_ROUNDS),
        _zk("uvicorn", "memory", _loads("delete json", "delete proto"), rounds=OVERHEAD_ROUNDS, server="uvicorn"),
    ),
    (  # store size, in memory
        _zk("memory-1k", "memory", _loads("delete json")),
        _zk("memory-1m", "memory", _loads("delete json"), vault_size=MILLION),
    ),
    (  # SQLite: one worker, two workers, a million items
        _zk("sqlite", "sqlite", _loads(*DURABLE, half=("delete json",))),
        _zk("sqlite-2w", "sqlite", _loads(*DURABLE), workers=2),
        _zk("sqlite-1m", "sqlite", _loads("delete json"), vault_size=MILLION),
    ),
    (  # PostgreSQL: one worker, two workers
        _zk("postgresql", "postgresql", _loads(*DURABLE, half=("delete json",))),
        _zk("postgresql-2w", "postgresql", _loads(*DURABLE), workers=2),
    ),
    *NAMED.values(),
)
