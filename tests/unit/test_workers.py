"""`serve --workers N`: worker processes on sockets of their own, and what their exits mean."""

from __future__ import annotations

import socket

import pytest

from tests.e2e.server import free_port
from zkplatform.workers import listening_socket, run_workers


def _exits_with_3(bind: str) -> None:
    raise SystemExit(3)


def _free_bind() -> str:
    return f"127.0.0.1:{free_port()}"


def test_a_failing_worker_is_the_exit_code() -> None:
    assert run_workers(2, _free_bind(), _exits_with_3) == 3


def test_workers_may_bind_the_same_address() -> None:
    bind = _free_bind()
    first, second = listening_socket(bind), listening_socket(bind)
    try:
        first.listen()
        second.listen()
    finally:
        first.close()
        second.close()


def test_a_taken_address_fails_before_any_worker_starts() -> None:
    with socket.socket() as taken:  # without SO_REUSEPORT, as another program would hold it
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        with pytest.raises(OSError, match="in use"):
            run_workers(2, f"127.0.0.1:{taken.getsockname()[1]}", _exits_with_3)
