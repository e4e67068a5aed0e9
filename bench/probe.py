"""`zkplatform serve` with a probe: where a worker's memory and tasks go, on a signal.

    python -m bench.probe OUT.json serve --dev ...     (then: kill -USR1 PID; kill -USR2 PID)

The server as its command line runs it, started with tracemalloc on (one frame: by line). SIGUSR1
takes a baseline snapshot; SIGUSR2 writes OUT.json: the memory allocated since the baseline
by source line and by file (top 40 each), the event loop's tasks by the coroutine they run,
and its timers by callback. Nothing of src/ changes: the probe is the harness's.
"""

from __future__ import annotations

import asyncio
import json
import signal
import sys
import tracemalloc
from collections import Counter
from pathlib import Path
from types import FrameType
from typing import Any

FRAMES = 1
TOP = 40

_baseline: list[tracemalloc.Snapshot] = []


def _snapshot() -> tracemalloc.Snapshot:
    return tracemalloc.take_snapshot().filter_traces([tracemalloc.Filter(inclusive=False, filename_pattern="<*>")])


def _mark(_signum: int, _frame: FrameType | None) -> None:
    _baseline[:] = [_snapshot()]


def _stat(stat: tracemalloc.StatisticDiff) -> dict[str, Any]:
    return {"where": str(stat.traceback[0]), "kib": stat.size_diff / 1024, "blocks": stat.count_diff}


def _loop_state() -> dict[str, Any]:
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return {}
    tasks = Counter(getattr(task.get_coro(), "__qualname__", "?") for task in asyncio.all_tasks(loop))
    scheduled = getattr(loop, "_scheduled", [])
    timers = Counter(getattr(getattr(h, "_callback", None), "__qualname__", "?") for h in scheduled)
    return {"tasks": tasks.most_common(TOP), "timers": timers.most_common(TOP), "timer_count": len(scheduled)}


def _write(out: Path) -> Any:  # a signal handler
    def write(_signum: int, _frame: FrameType | None) -> None:
        now = _snapshot()
        base = _baseline[0] if _baseline else now
        lines = now.compare_to(base, "lineno")[:TOP]
        files = now.compare_to(base, "filename")[:TOP]
        traced, peak = tracemalloc.get_traced_memory()
        document = {
            "traced_mib": traced / 2**20,
            "peak_mib": peak / 2**20,
            "by_line": [_stat(s) for s in lines],
            "by_file": [_stat(s) for s in files],
            **_loop_state(),
        }
        out.write_text(json.dumps(document, indent=1))

    return write


def main() -> None:
    out = Path(sys.argv[1])
    tracemalloc.start(FRAMES)
    signal.signal(signal.SIGUSR1, _mark)
    signal.signal(signal.SIGUSR2, _write(out))
    sys.argv = ["zkplatform", *sys.argv[2:]]
    from zkplatform.cli import main as serve  # noqa: PLC0415 # after tracemalloc started

    raise SystemExit(serve())


if __name__ == "__main__":
    main()
