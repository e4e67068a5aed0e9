"""Worker processes for `zkplatform serve --workers N`, each on its own listening socket.

hypercorn's multi-worker mode hands one listening socket to every worker, and
whichever worker wakes first accepts a whole burst of new connections: the few
long-lived keep-alive connections of a load balancer (or a load generator) can
all land on one worker while the others idle, and N workers serve like one.
Here each worker binds a socket of its own to the address with SO_REUSEPORT,
and the kernel spreads new connections evenly over them. A worker listens only
once its application has started, so no connection waits on a worker that is
still opening its store; it then tells the parent, which knows when all listen.

Workers never outlive their server. However the parent ends (kill -9 included),
the kernel sends each worker SIGTERM (PR_SET_PDEATHSIG), and it stops as on any
SIGTERM. Each worker holds the port's lock too, so the port stays taken until
the last of them has finished its calls: a new server on the port starts only
once the old one is wholly gone, never beside its orphans.
"""

from __future__ import annotations

import ctypes
import errno
import logging
import multiprocessing
import os
import signal
import socket
import time
from collections.abc import Callable
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from types import FrameType

STOP_TIMEOUT_S = 30.0
_PR_SET_PDEATHSIG = 1  # linux/prctl.h

log = logging.getLogger(__name__)

# What a worker runs: worker(bind, ready), calling ready() once its socket listens.
Worker = Callable[[str, Callable[[], None]], None]


class AddressUnavailable(Exception):
    """The address cannot be served; the message says why and what to do."""


def hold_address(bind: str) -> socket.socket:
    """A lock on the port for this server's lifetime: one zkplatform server per port.

    SO_REUSEPORT lets a second server's workers bind the port too, and the kernel
    would then split the connections between two servers. The lock is a Linux
    abstract-namespace unix socket named after the port: binding a name that is
    taken fails, and the kernel frees the name when the process ends, however it
    ends, so no stale lock file survives a kill -9. It is named after the port,
    not the address, because SO_REUSEPORT sockets on 0.0.0.0:P and 127.0.0.1:P
    coexist too, and the more specific one would silently take the other's calls.
    Like ports, these names belong to the network namespace."""
    port = bind.rpartition(":")[2]
    lock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        lock.bind(f"\0zkplatform-serve-port-{port}")
    except OSError as error:
        lock.close()
        if error.errno != errno.EADDRINUSE:
            raise
        msg = f"another zkplatform server already serves port {port}: stop it, or choose another --bind"
        raise AddressUnavailable(msg) from None
    return lock


def listening_socket(bind: str, *, shared: bool = True) -> socket.socket:
    """A TCP socket bound (not yet listening) to HOST:PORT ([::1]:PORT for IPv6);
    `shared`: other workers of this server may bind the address too (SO_REUSEPORT)."""
    host, _, port = bind.rpartition(":")
    host = host.removeprefix("[").removesuffix("]")
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if shared:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind((host, int(port)))
    except OSError as error:
        sock.close()
        raise AddressUnavailable(_why(bind, error)) from None
    return sock


def listen(sock: socket.socket, bind: str, backlog: int) -> None:
    """Start listening; another program may have started listening on the address since we bound it."""
    try:
        sock.listen(backlog)
    except OSError as error:
        raise AddressUnavailable(_why(bind, error)) from None


def _why(bind: str, error: OSError) -> str:
    if error.errno == errno.EADDRINUSE:
        return f"{bind} is already in use: stop what listens there, or choose another --bind"
    if error.errno == errno.EACCES:
        return f"not allowed to listen on {bind}: choose a port above 1023, or another --bind"
    if error.errno == errno.EADDRNOTAVAIL:
        return f"{bind} is not an address of this host: choose another --bind"
    return f"cannot listen on {bind} ({error.strerror or error}): choose another --bind"


def run_workers(  # noqa: PLR0913 # the workers, and how they start, stop and hold the port
    count: int,
    bind: str,
    worker: Worker,
    on_ready: Callable[[], None] = lambda: None,
    *,
    stop_timeout: float = STOP_TIMEOUT_S,
    lock: socket.socket | None = None,
) -> int:
    """Run `worker(bind, ready)` in `count` spawned processes until one exits or we are told to stop.

    `on_ready` runs once every worker has called its `ready`. The first worker
    to exit stops the others; its exit code is ours (0 when we were told to stop).
    A worker told to stop (SIGTERM) finishes its calls in flight; one still
    running after `stop_timeout` seconds is killed. Each worker holds `lock`
    (hold_address's) as long as it lives."""
    context = multiprocessing.get_context("spawn")  # a clean interpreter each: no forked event loop or pool
    readiness, tell = context.Pipe(duplex=False)
    processes: list[BaseProcess] = [
        context.Process(target=_run, args=(worker, bind, tell, lock, os.getpid())) for _ in range(count)
    ]
    started: list[BaseProcess] = []
    stopping = False

    def stop(_signum: int, _frame: FrameType | None) -> None:
        nonlocal stopping
        stopping = True
        for process in started:
            if process.is_alive():
                process.terminate()  # SIGTERM: the worker shuts down gracefully

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        for process in processes:
            if stopping:
                break
            # A worker ignores SIGINT and SIGHUP from birth (an ignored signal
            # stays ignored in the child): Ctrl-C and a terminal's hangup reach
            # the whole process group, and a worker still starting would die of
            # a KeyboardInterrupt traceback. The parent relays Ctrl-C as
            # SIGTERM, and says that it ignores a hangup.
            hangup = signal.signal(signal.SIGHUP, signal.SIG_IGN)
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            try:
                process.start()
            finally:
                signal.signal(signal.SIGINT, stop)
                signal.signal(signal.SIGHUP, hangup)
            started.append(process)
        tell.close()  # ours: the workers hold their own copies
        if not started:
            return 0
        first = _first_exit(started, readiness, on_ready)
        told_to_stop = stopping
        stop(signal.SIGTERM, None)
        _join(started, stop_timeout)
    finally:
        readiness.close()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    code = first.exitcode or 0
    if told_to_stop or code == 0:
        return 0
    log.error("worker %d exited with code %d; stopped the others", first.pid, code)
    return code if code > 0 else 1  # a negative code: killed by that signal


def _join(processes: list[BaseProcess], timeout: float) -> None:
    deadline = time.monotonic() + timeout  # one deadline for all: they stop side by side
    for process in processes:
        process.join(max(0.0, deadline - time.monotonic()))
        if process.is_alive():
            process.kill()
            process.join()


def _first_exit(processes: list[BaseProcess], readiness: Connection, on_ready: Callable[[], None]) -> BaseProcess:
    """Wait for a worker to exit, calling on_ready once all have said they listen; the worker that exited."""
    by_sentinel = {process.sentinel: process for process in processes}
    ready: set[int] = set()
    watched: list[Connection | int] = [readiness, *by_sentinel]
    while True:
        for event in wait(watched):
            if isinstance(event, int):
                return by_sentinel[event]
            try:
                ready.add(readiness.recv())
            except EOFError:  # every worker has exited: their sentinels say so
                watched.remove(readiness)
                continue
            if len(ready) == len(processes):
                on_ready()


def _run(worker: Worker, bind: str, tell: Connection, lock: socket.socket | None, parent: int) -> None:
    """A worker process's entry point: ready() tells the parent this worker listens. `lock`
    is only held: the port stays taken while this worker lives."""
    _stop_with_parent(parent)
    try:
        worker(bind, lambda: tell.send(os.getpid()))
    finally:
        if lock is not None:
            lock.close()


def _stop_with_parent(parent: int) -> None:
    """Have the kernel send this process SIGTERM when its parent ends, however it ends."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0) != 0:
        log.warning("this worker cannot follow its parent (prctl: %s)", os.strerror(ctypes.get_errno()))
    if os.getppid() != parent:  # it ended before the request above took effect
        raise SystemExit(0)
