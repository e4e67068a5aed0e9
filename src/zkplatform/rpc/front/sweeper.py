"""A periodic check, run only while there is something to check: what finds the calls that waited
past a bound (a body that does not arrive, an answer nobody reads) with one task per worker,
rather than a timer armed for each call, most of which end long before their bound."""

from __future__ import annotations

import asyncio
from collections.abc import Callable


class Sweeper:
    """Calls `sweep(now)` every `period` seconds (the event loop's clock) from the first `start()`
    until a call answers False (nothing left to watch); `start()` again after that starts it anew."""

    def __init__(self, period: float, sweep: Callable[[float], bool]) -> None:
        self._period = period
        self._sweep = sweep
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run())

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            while True:
                await asyncio.sleep(self._period)
                if not self._sweep(loop.time()):
                    return
        finally:
            self._task = None
