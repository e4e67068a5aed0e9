"""The Prometheus series, and the listener of their own that serves them.

Several workers (`serve --workers N`) are separate processes: each writes its
samples into files of a directory the parent made (prometheus-client's
multiprocess mode, PROMETHEUS_MULTIPROC_DIR set before the workers start), and
the parent, which serves the metrics port, adds them up at each scrape. Gauges
sum over the workers alive. With one worker the process serves its own registry.
"""

from __future__ import annotations

import fcntl
import importlib.metadata
import logging
import os
import platform
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Final
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server
from prometheus_client.multiprocess import MultiProcessCollector

from zkplatform.observability import probes

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIApplication, WSGIEnvironment

MULTIPROC_DIR = "PROMETHEUS_MULTIPROC_DIR"
# A server's directory of workers' files, under the temporary directory: zkplatform-metrics-XXXXXXXX,
# holding OWNER_LOCK, locked by the server while it runs.
DIRECTORY_PREFIX = "zkplatform-metrics-"
OWNER_LOCK = "owner.lock"
# How long a directory without a lock is taken for one being made (the lock follows within
# microseconds) rather than one left by a server that had no lock (before this version).
STARTING_SECONDS = 60.0
# Calls take from well under a millisecond (memory) to seconds (a store struggling).
LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256)
_POOL_REFRESH_SECONDS = 1.0

log = logging.getLogger(__name__)


class Metrics:
    """Every series the server exports, registered on `registry`."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry
        self.calls = Counter(
            "zkplatform_rpc_calls",
            "RPCs served, by procedure, protocol and final code",
            ["procedure", "protocol", "code"],
            registry=registry,
        )
        self.duration = Histogram(
            "zkplatform_rpc_call_duration_seconds",
            "Time from a call's request headers to the end of its answer",
            ["procedure", "protocol"],
            buckets=LATENCY_BUCKETS,
            registry=registry,
        )
        self.in_flight = Gauge(
            "zkplatform_rpc_calls_in_flight",
            "RPCs being served",
            ["procedure"],
            multiprocess_mode="livesum",
            registry=registry,
        )
        self.streams = Gauge(
            "zkplatform_rpc_streams_open",
            "Streaming calls open",
            multiprocess_mode="livesum",
            registry=registry,
        )
        self.auth_refusals = Counter(
            "zkplatform_auth_refusals",
            "Calls refused as unauthenticated, by reason",
            ["reason"],
            registry=registry,
        )
        self.store_duration = Histogram(
            "zkplatform_store_operation_duration_seconds",
            "Time a store operation took, queueing for the connection or writer included",
            ["store", "operation"],
            buckets=LATENCY_BUCKETS,
            registry=registry,
        )
        self.build_info = Gauge(
            "zkplatform_build_info",
            "Always 1: the server's version and Python's, as labels",
            ["version", "python"],
            multiprocess_mode="livemax",
            registry=registry,
        )
        self.build_info.labels(_version(), platform.python_version()).set(1)
        # A store's own series exist only where that store serves: no SQLite series on PostgreSQL.
        self._commit_batch_size: Histogram | None = None
        self._pool_connections: Gauge | None = None
        self._pool_waiting: Gauge | None = None
        # The labelled children, found once: labels() validates and locks on every call.
        self._in_flight: dict[str, Gauge] = {}
        self._calls: dict[tuple[str, str, str], Counter] = {}
        self._durations: dict[tuple[str, str], Histogram] = {}
        self._pools: list[probes.PoolStats] = []
        self._pools_read_at = 0.0

    def in_flight_of(self, procedure: str) -> Gauge:
        if (child := self._in_flight.get(procedure)) is None:
            child = self._in_flight[procedure] = self.in_flight.labels(procedure)
        return child

    def ended(self, procedure: str, protocol: str, code: str, seconds: float) -> None:
        """A call ended: count it and its duration."""
        if (calls := self._calls.get((procedure, protocol, code))) is None:
            calls = self._calls[procedure, protocol, code] = self.calls.labels(procedure, protocol, code)
        if (duration := self._durations.get((procedure, protocol))) is None:
            duration = self._durations[procedure, protocol] = self.duration.labels(procedure, protocol)
        calls.inc()
        duration.observe(seconds)

    # probes.Sink

    def store_operation(self, store: str, operation: str, seconds: float) -> None:
        self.store_duration.labels(store, operation).observe(seconds)

    def commit_batch(self, size: int) -> None:
        if self._commit_batch_size is None:
            self._commit_batch_size = Histogram(
                "zkplatform_sqlite_commit_batch_size",
                "Use cases committed together by one SQLite transaction (group commit)",
                buckets=BATCH_BUCKETS,
                registry=self.registry,
            )
        self._commit_batch_size.observe(size)

    def watch_pool(self, stats: probes.PoolStats) -> None:
        if self._pool_connections is None:
            self._pool_connections = Gauge(
                "zkplatform_postgres_pool_connections",
                "PostgreSQL pool connections, by state (open, idle) and the configured bound (max)",
                ["state"],
                multiprocess_mode="livesum",
                registry=self.registry,
            )
            self._pool_waiting = Gauge(
                "zkplatform_postgres_pool_requests_waiting",
                "Requests waiting for a PostgreSQL connection",
                multiprocess_mode="livesum",
                registry=self.registry,
            )
        self._pools.append(stats)
        self.refresh_pools(force=True)

    def refresh_pools(self, *, force: bool = False) -> None:
        """Copy the pools' figures into the gauges, at most once a second: a
        worker cannot be asked at scrape time, so the calls it serves refresh them."""
        now = time.monotonic()
        connections, waiting = self._pool_connections, self._pool_waiting
        if connections is None or waiting is None or (not force and now - self._pools_read_at < _POOL_REFRESH_SECONDS):
            return
        self._pools_read_at = now
        totals = {"pool_size": 0, "pool_available": 0, "pool_max": 0, "requests_waiting": 0}
        for stats in self._pools:
            figures = stats()
            for key in totals:
                totals[key] += figures.get(key, 0)
        connections.labels("open").set(totals["pool_size"])
        connections.labels("idle").set(totals["pool_available"])
        connections.labels("max").set(totals["pool_max"])
        waiting.set(totals["requests_waiting"])


def _version() -> str:
    try:
        return importlib.metadata.version("zkplatform")
    except importlib.metadata.PackageNotFoundError:  # run from a checkout without installing it
        return "unknown"


def install(metrics: Metrics | None) -> None:
    """Let the stores' probes report to `metrics` (None: to nothing)."""
    probes.install(metrics)


# Whether a metrics request must be refused, given its URL's path and query: the caller
# revokes a token it finds there (a URL is logged and shared: the token has leaked).
Screen = Callable[[str, bytes], bool]
_REFUSAL = b"a token must never be sent in the URL; it has been revoked, use the Authorization header\n"


class MetricsListener:
    """The metrics port: Prometheus text at any path, no token needed (it carries no secret).
    A URL carrying a token is refused (400) once `screen` has revoked it, as on the API port."""

    def __init__(self, server: WSGIServer, thread: threading.Thread) -> None:
        self._server = server
        self._thread = thread

    @classmethod
    def start(cls, bind: str, registry: CollectorRegistry, screen: Screen | None = None) -> MetricsListener:
        """Listen on HOST:PORT ([::1]:PORT for IPv6); OSError when the address cannot be had."""
        host, _, port = bind.rpartition(":")
        server, thread = start_http_server(int(port), host.removeprefix("[").removesuffix("]"), registry)
        app = server.get_app()
        if screen is not None and app is not None:
            server.set_app(_screened(app, screen))
        return cls(server, thread)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()


def _screened(app: WSGIApplication, screen: Screen) -> WSGIApplication:
    def screened(environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        # wsgiref gives the path percent-decoded as latin-1, the query as sent: as ASGI does.
        if screen(environ.get("PATH_INFO", ""), environ.get("QUERY_STRING", "").encode("latin-1")):
            start_response("400 Bad Request", [("Content-Type", "text/plain; charset=utf-8")])
            return [_REFUSAL]
        return app(environ, start_response)

    return screened


@contextmanager
def multiprocess_registry() -> Iterator[CollectorRegistry]:
    """For workers in processes of their own: a fresh directory named in the
    environment (the workers inherit it), a registry adding up its files, and
    the directory removed at the end.

    A server killed with -9 removes nothing: its directory is removed by the next
    server to start here (as the Prometheus multiprocess guide says: a directory per
    run, wiped before start-up), once nothing holds its owner's lock."""
    parent = Path(tempfile.gettempdir())
    remove_stale_directories(parent)
    directory = Path(tempfile.mkdtemp(prefix=DIRECTORY_PREFIX, dir=parent))
    owner = _own(directory)
    previous = os.environ.get(MULTIPROC_DIR)
    os.environ[MULTIPROC_DIR] = str(directory)
    try:
        registry = CollectorRegistry()
        MultiProcessCollector(registry, path=str(directory))  # type: ignore[no-untyped-call] # untyped upstream
        yield registry
    finally:
        if previous is None:
            os.environ.pop(MULTIPROC_DIR, None)
        else:
            os.environ[MULTIPROC_DIR] = previous
        shutil.rmtree(directory, ignore_errors=True)
        os.close(owner)


def remove_stale_directories(parent: Path) -> list[Path]:
    """Remove the metrics directories under `parent` that no server owns any more: this user's
    (never another's, nor a symbolic link), whose owner's lock nothing holds (the kernel
    releases it when the process ends, however it ends), or, made before there were locks,
    without one and older than STARTING_SECONDS. The directories removed."""
    removed = []
    with os.scandir(parent) as entries:
        for entry in entries:
            if not entry.name.startswith(DIRECTORY_PREFIX) or not entry.is_dir(follow_symlinks=False):
                continue
            if entry.stat(follow_symlinks=False).st_uid != os.getuid() or _owned(Path(entry.path)):
                continue
            shutil.rmtree(entry.path, ignore_errors=True)
            removed.append(Path(entry.path))
    if removed:
        log.info(
            "removed %d metrics director%s left by servers that ended without removing them (killed): %s",
            len(removed),
            "y" if len(removed) == 1 else "ies",
            ", ".join(str(path) for path in removed),
        )
    return removed


def _own(directory: Path) -> int:
    """Take the directory's owner lock for as long as the returned descriptor stays open.

    Locked under another name, then renamed: whoever looks finds either no lock (a directory
    being made, left alone while young) or a held one, never one it could take in between."""
    locking = directory / f".{OWNER_LOCK}"
    fd = os.open(locking, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    locking.rename(directory / OWNER_LOCK)
    return fd


def _owned(directory: Path) -> bool:
    """Whether a server still owns the directory: it holds its lock, or is making it now."""
    try:
        fd = os.open(directory / OWNER_LOCK, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        try:
            age = time.time() - directory.stat().st_mtime
        except FileNotFoundError:
            return True  # removed meanwhile: nothing to do
        return age < STARTING_SECONDS
    except OSError:
        return True  # not ours to judge (a link, a permission): left alone
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # releases the lock, if it was taken
    return False


# The failed check, from the start of the message the domain refuses with
# (domain/auth.py, rpc/interceptors/auth.py): a bounded label, never the message itself.
_REFUSALS: Final = (
    ("missing authorization", "missing"),
    ("more than one authorization", "malformed"),
    ("the authorization header must be", "malformed"),
    ("malformed token", "malformed"),
    ("unknown token", "unknown"),
    ("token revoked", "revoked"),
    ("token expired", "expired"),
    ("principal disabled", "disabled"),
    ("a key-bound token", "dpop"),
    ("dpop", "dpop"),
)


def refusal_reason(message: str) -> str:
    """The label of an authentication refusal with this message."""
    lowered = message.lower()
    return next((reason for prefix, reason in _REFUSALS if lowered.startswith(prefix)), "other")
