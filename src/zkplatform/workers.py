"""Worker processes for `zkplatform serve --workers N`, each on its own listening socket.

hypercorn's multi-worker mode hands one listening socket to every worker, and
whichever worker wakes first accepts a whole burst of new connections: the few
long-lived keep-alive connections of a load balancer (or a load generator) can
all land on one worker while the others idle, and N workers serve like one.
Here each worker binds a socket of its own to the address with SO_REUSEPORT,
and the kernel spreads new connections evenly over them. A worker listens only
once its application has started, so no connection waits on a worker that is
still opening its store.
"""

from __future__ import annotations

import multiprocessing
import signal
import socket
from collections.abc import Callable
from multiprocessing.connection import wait
from multiprocessing.process import BaseProcess
from types import FrameType

STOP_TIMEOUT_S = 30.0


def listening_socket(bind: str) -> socket.socket:
    """A TCP socket bound to HOST:PORT ([::1]:PORT for IPv6) that other workers may bind too."""
    host, _, port = bind.rpartition(":")
    host = host.removeprefix("[").removesuffix("]")
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind((host, int(port)))
    except BaseException:
        sock.close()
        raise
    return sock


def run_workers(count: int, bind: str, worker: Callable[[str], None]) -> int:
    """Run `worker(bind)` in `count` spawned processes until one exits or we are told to stop.

    Binding once here first makes a taken address fail before anything starts.
    The first worker to exit stops the others; its exit code is ours."""
    listening_socket(bind).close()
    context = multiprocessing.get_context("spawn")  # a clean interpreter each: no forked event loop or pool
    processes: list[BaseProcess] = [context.Process(target=worker, args=(bind,)) for _ in range(count)]
    stopping = told_to_stop = False

    def stop(_signum: int, _frame: FrameType | None) -> None:
        nonlocal stopping
        stopping = True
        for process in processes:
            if process.is_alive():
                process.terminate()  # SIGTERM: hypercorn shuts the worker down gracefully

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        for process in processes:
            process.start()
        wait([process.sentinel for process in processes])
        told_to_stop = stopping
        stop(signal.SIGTERM, None)
        for process in processes:
            process.join(STOP_TIMEOUT_S)
            if process.is_alive():
                process.kill()
                process.join()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    failures = [process.exitcode for process in processes if process.exitcode]
    if told_to_stop or not failures:
        return 0
    return failures[0] if failures[0] > 0 else 1  # a negative code: killed by that signal
