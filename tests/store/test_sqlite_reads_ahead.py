"""The SQLite store's reader thread reads no further ahead of the event loop than READS_AHEAD.

What a read returns waits in memory until its caller's task runs again. While the loop is busy
(answering other calls), a thread that went on reading would pile up every page asked for:
six hundred ListItems of 3 MiB pages at once took a worker to GiBs (issue 39)."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path

from zkplatform.store.sqlite_engine import READS_AHEAD, SQLiteEngine

READS = 20
BUSY_S = 1.0  # how long the loop stays busy: far longer than the reads that may run meanwhile take


async def test_the_reader_waits_for_the_loop_to_take_what_it_read(tmp_path: Path) -> None:
    engine = SQLiteEngine(tmp_path / "store.db")
    await engine.open()
    started: list[int] = []
    beyond = threading.Event()  # a read started beyond those allowed ahead

    def read(number: int) -> Callable[[sqlite3.Connection], int]:
        def run(conn: sqlite3.Connection) -> int:
            started.append(number)
            if len(started) > READS_AHEAD:
                beyond.set()
            return int(conn.execute("SELECT ?", (number,)).fetchone()[0])

        return run

    try:
        reads = [asyncio.create_task(engine.read(read(n))) for n in range(READS)]
        await asyncio.sleep(0)  # each task asks for its read
        # The loop busy, as a worker answering other calls is: nothing the reader returns is taken.
        ran_ahead = beyond.wait(BUSY_S)
        results = await asyncio.gather(*reads)
    finally:
        await engine.close()

    assert not ran_ahead, f"{len(started)} reads ran while the loop was busy"
    assert results == list(range(READS))
