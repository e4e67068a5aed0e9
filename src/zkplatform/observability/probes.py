"""Hooks the stores call to be measured, without knowing of Prometheus.

Until metrics are switched on (metrics.py installs a sink), every hook is a
global read and a return.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from time import perf_counter
from typing import Protocol

PoolStats = Callable[[], Mapping[str, int]]


class Sink(Protocol):
    def store_operation(self, store: str, operation: str, seconds: float) -> None: ...

    def commit_batch(self, size: int) -> None: ...

    def watch_pool(self, stats: PoolStats) -> None: ...


_sink: Sink | None = None


def install(sink: Sink | None) -> None:
    """Where the hooks report from now on (None: nowhere)."""
    global _sink  # noqa: PLW0603 # one sink per process, like the metrics it feeds
    _sink = sink


def store_operation(store: str, operation: str, started: float) -> None:
    """A store operation that began at `started` (a perf_counter reading) has ended."""
    if _sink is not None:
        _sink.store_operation(store, operation, perf_counter() - started)


def commit_batch(size: int) -> None:
    """The SQLite writer committed `size` use cases in one transaction."""
    if _sink is not None:
        _sink.commit_batch(size)


def watch_pool(stats: PoolStats) -> None:
    """A connection pool was opened; `stats` reads its figures (psycopg_pool's get_stats)."""
    if _sink is not None:
        _sink.watch_pool(stats)
