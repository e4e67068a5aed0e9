"""Writes a call does not wait for: started now, finished by the store's close."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any

log = logging.getLogger(__name__)


class Background:
    """Fire-and-forget writes, kept referenced until done (asyncio holds tasks only
    weakly), their failures logged, and awaited when the store closes."""

    def __init__(self, what: str) -> None:
        self._what = what
        self._tasks: set[asyncio.Task[Any]] = set()

    def start(self, write: Coroutine[Any, Any, Any]) -> None:
        task = asyncio.get_running_loop().create_task(write)
        self._tasks.add(task)
        task.add_done_callback(self._finished)

    def _finished(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and (error := task.exception()) is not None:
            log.warning("%s failed: %s", self._what, error)

    async def drain(self) -> None:
        """Wait for the writes under way: before the store closes its connections."""
        while self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
