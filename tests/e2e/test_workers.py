"""`serve --workers N`: worker processes on sockets of their own, and what their exits mean."""

from __future__ import annotations

import functools
import multiprocessing
import os
import signal
import socket
from collections.abc import Callable
from multiprocessing.synchronize import Barrier
from pathlib import Path

import pytest

from tests.e2e.server import free_port
from zkplatform.server.workers import AddressUnavailable, hold_address, listening_socket, run_workers

SPAWN = multiprocessing.get_context("spawn")


def _free_bind() -> str:
    return f"127.0.0.1:{free_port()}"


def _last_started_exits_with_3(bind: str, ready: Callable[[], None], *, pids: Path, barrier: Barrier) -> None:
    """Once every worker runs: the last one started exits with 3, the others wait for a signal."""
    (pids / str(os.getpid())).touch()
    barrier.wait(timeout=60)
    if os.getpid() == max(int(path.name) for path in pids.iterdir()):
        raise SystemExit(3)
    signal.pause()  # until run_workers terminates us


def test_the_worker_that_exits_first_is_the_exit_code(tmp_path: Path) -> None:
    # Processes start in list order, so the last started is the last in the list; the
    # others are terminated (-15) after it exits, and must not be taken for the failure.
    worker = functools.partial(_last_started_exits_with_3, pids=tmp_path, barrier=SPAWN.Barrier(3))

    assert run_workers(3, _free_bind(), worker) == 3


def _ready_then_wait(bind: str, ready: Callable[[], None], *, log: Path) -> None:
    with log.open("a") as file:
        file.write(f"{os.getpid()}\n")
    ready()
    signal.pause()


def test_ready_is_told_once_every_worker_is_ready(tmp_path: Path) -> None:
    log = tmp_path / "ready"
    seen: list[int] = []

    def on_ready() -> None:
        seen.append(len(log.read_text().splitlines()))
        os.kill(os.getpid(), signal.SIGTERM)  # stop the server, as an operator would

    code = run_workers(3, _free_bind(), functools.partial(_ready_then_wait, log=log), on_ready)

    assert seen == [3]
    assert code == 0  # told to stop: however its workers ended, the server stopped cleanly


def test_workers_may_bind_the_same_address() -> None:
    bind = _free_bind()
    first, second = listening_socket(bind), listening_socket(bind)
    try:
        first.listen()
        second.listen()
        listening = [sock.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN) for sock in (first, second)]
        addresses = {first.getsockname(), second.getsockname()}
    finally:
        first.close()
        second.close()

    assert listening == [1, 1]
    assert addresses == {("127.0.0.1", int(bind.rsplit(":", 1)[1]))}


def test_a_taken_address_is_refused_with_what_to_do() -> None:
    with socket.socket() as taken:  # without SO_REUSEPORT, as another program would hold it
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        bind = f"127.0.0.1:{taken.getsockname()[1]}"
        with pytest.raises(AddressUnavailable, match=f"{bind} is already in use: stop what listens there"):
            listening_socket(bind)


def test_one_server_holds_a_port_until_it_ends() -> None:
    bind = _free_bind()
    with hold_address(bind):
        with pytest.raises(AddressUnavailable, match="another zkplatform server already serves port"):
            hold_address(bind)
        with hold_address(f"127.0.0.1:{free_port()}"):  # another port is another lock
            pass
    with hold_address(bind):  # released with its holder
        pass


def test_the_workers_hold_the_port_too() -> None:
    """Were the parent gone (kill -9), its workers, still finishing their calls, keep the
    port taken: no second server starts beside them."""
    bind = _free_bind()
    lock = hold_address(bind)
    held_by_the_worker: list[bool] = []

    def on_ready() -> None:
        lock.close()  # as the parent's end would
        try:
            hold_address(bind).close()
        except AddressUnavailable:
            held_by_the_worker.append(True)
        else:
            held_by_the_worker.append(False)
        os.kill(os.getpid(), signal.SIGTERM)

    code = run_workers(1, bind, functools.partial(_ready_then_wait, log=Path(os.devnull)), on_ready, lock=lock)

    assert code == 0
    assert held_by_the_worker == [True]
    hold_address(bind).close()  # free once the worker has ended
