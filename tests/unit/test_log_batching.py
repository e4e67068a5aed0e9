"""Access lines are written in batches; nothing is lost or reordered, and closing writes what waits."""

from __future__ import annotations

import io
import logging
import os
import threading
import time
from pathlib import Path

from zkplatform.observability.logs import ACCESS_LOGGER, BatchingHandler

WAIT_S = 5.0


class Watched(io.StringIO):
    """A stream that tells when something was written to it."""

    def __init__(self) -> None:
        super().__init__()
        self.written = threading.Event()

    def write(self, text: str) -> int:
        written = super().write(text)
        self.written.set()
        return written


def record(name: str, message: str) -> logging.LogRecord:
    return logging.makeLogRecord({"name": name, "msg": message, "levelno": logging.INFO, "levelname": "INFO"})


def handler(stream: io.StringIO, interval: float = 3600) -> BatchingHandler:
    made = BatchingHandler(stream, interval=interval)
    made.setFormatter(logging.Formatter("%(name)s %(message)s"))
    return made


def test_access_lines_wait_and_any_other_record_writes_them_first_in_order() -> None:
    stream = io.StringIO()
    batching = handler(stream)
    batching.handle(record(ACCESS_LOGGER, "call 1"))
    batching.handle(record(ACCESS_LOGGER, "call 2"))
    held_back = stream.getvalue()

    batching.handle(record("zkplatform.app", "started"))

    assert held_back == ""
    assert stream.getvalue().splitlines() == [
        f"{ACCESS_LOGGER} call 1",
        f"{ACCESS_LOGGER} call 2",
        "zkplatform.app started",
    ]
    batching.close()


def test_closing_writes_the_lines_still_waiting() -> None:
    stream = io.StringIO()
    batching = handler(stream)
    for n in range(3):
        batching.handle(record(ACCESS_LOGGER, f"call {n}"))

    batching.close()  # what logging.shutdown does to every handler at the process's exit

    assert stream.getvalue().splitlines() == [f"{ACCESS_LOGGER} call {n}" for n in range(3)]


def test_waiting_lines_are_written_within_the_interval_without_any_other_record() -> None:
    stream = Watched()
    batching = handler(stream, interval=0.05)
    batching.handle(record(ACCESS_LOGGER, "call 1"))

    assert stream.written.wait(WAIT_S), "written by the handler's thread"
    assert stream.getvalue() == f"{ACCESS_LOGGER} call 1\n"
    batching.close()


def test_a_forked_worker_flushes_its_own_access_lines(tmp_path: Path) -> None:
    with (tmp_path / "log").open("w") as stream:
        batching = BatchingHandler(stream, interval=0.05)
        batching.setFormatter(logging.Formatter("%(message)s"))
        batching.handle(record(ACCESS_LOGGER, "parent"))  # the parent's flusher thread starts
        child = os.fork()
        if child == 0:  # the worker: its line must reach the file without any other record or exit
            batching.handle(record(ACCESS_LOGGER, "child"))
            deadline = time.monotonic() + WAIT_S
            while "child" not in (tmp_path / "log").read_text() and time.monotonic() < deadline:
                time.sleep(0.01)
            os._exit(0 if "child" in (tmp_path / "log").read_text() else 1)
        _, status = os.waitpid(child, 0)
        batching.close()
    assert os.waitstatus_to_exitcode(status) == 0
