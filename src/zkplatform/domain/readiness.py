"""Readiness: whether this worker can serve calls, which is whether its store can be reached.

What `/readyz` and the gRPC health service answer (liveness, `/healthz`, asks nothing of
the store). One cheap probe of the store (the port's `ping`) answers for every health
check of the worker for FRESH_FOR seconds: at most one probe is in flight at a time, and
whoever asks while it runs waits for its answer. A call that failed because the store was
unavailable marks the store down at once, until the next probe, FRESH_FOR later, finds it
back. So a load balancer's checks cost the store at most one query a second per worker,
however many there are, and a store outage shows within about a second.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncGenerator, Awaitable, Callable

from zkplatform.domain.errors import StoreUnavailable

log = logging.getLogger(__name__)

FRESH_FOR = 1.0  # seconds a probe's answer stands


class Readiness:
    def __init__(
        self,
        ping: Callable[[], Awaitable[None]],
        *,
        fresh_for: float = FRESH_FOR,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._ping = ping
        self._fresh_for = fresh_for
        self._clock = clock
        self._ready = True  # the store was reachable when it was opened
        self._known_at: float | None = None  # when the answer was last known (monotonic); None: never probed
        self._probe: asyncio.Task[bool] | None = None
        self._changed = asyncio.Event()  # set, and replaced, at each change

    async def ready(self) -> bool:
        """Whether the store can be reached: the last answer while it is fresh, else a probe's."""
        if self._known_at is not None and self._clock() - self._known_at < self._fresh_for:
            return self._ready
        if self._probe is None:
            self._probe = asyncio.create_task(self._run_probe())
        # Shielded: a health check whose client left must not cancel the probe others wait for.
        return await asyncio.shield(self._probe)

    def mark_down(self) -> None:
        """A call found the store unavailable: not ready, until a probe FRESH_FOR later says otherwise."""
        self._set(ready=False, at=self._clock())

    async def changes(self) -> AsyncGenerator[bool]:
        """The readiness now, then each change of it, for as long as the caller iterates."""
        last = await self.ready()
        yield last
        while True:
            changed = self._changed
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self._fresh_for):
                    await changed.wait()
            now = await self.ready()
            if now != last:
                last = now
                yield now

    async def _run_probe(self) -> bool:
        started = self._clock()
        try:
            await self._ping()
        except StoreUnavailable:
            ready = False  # the store adapter logged why
        except Exception:
            log.exception("the store's readiness probe failed")
            ready = False
        else:
            ready = True
        finally:
            self._probe = None
        if self._known_at is not None and self._known_at > started and not self._ready:
            return False  # a call found the store down while this probe ran: that stands
        self._set(ready=ready, at=self._clock())
        return ready

    def _set(self, *, ready: bool, at: float) -> None:
        self._known_at = at
        if ready == self._ready:
            return
        self._ready = ready
        if ready:
            log.info("the store can be reached again: ready")
        else:
            log.warning("the store cannot be reached: not ready (/readyz and gRPC health answer so)")
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()
