"""Readiness: whether this worker can serve calls, which is whether its store can be reached.

What `/readyz` and the gRPC health service answer (liveness, `/healthz`, asks nothing of
the store), what refuses calls at once while the store is known down, and what ends the
watches when it goes down.

One cheap probe of the store (the port's `ping`, bounded by the store) answers for every
health check of the worker for FRESH_FOR seconds: at most one probe is in flight at a time,
and whoever asks while it runs waits for its answer, but never longer than ANSWER_WITHIN:
then the last answer stands, so that a load balancer's check (a 1 s timeout, say) gets an
answer, not a timeout, however long the probe takes. A call that failed because the store
was unavailable marks the store down at once and starts a probe, which confirms it, or
clears it when the store answers others (SQLite's write lock held by another process);
something that saw a connection to the store end (the change feed's) starts one too. So a
load balancer's checks cost the store at most one query a second per worker, however many
there are, and an outage shows as soon as anything meets it.

While the store is known down, calls are refused at once (`refuses`), without waiting for a
pooled connection that cannot come; once FRESH_FOR has passed, the next call or check probes
again (waiting at most ANSWER_WITHIN), and the first probe that reaches the store lets calls
through. Once the store is known down (marked down and not found back by the probe that
followed, within ANSWER_WITHIN, or found down by a probe), the `on_down` listeners are called: the
change feed's, which ends every watch of the worker at once, without a task per watch waiting.
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
ANSWER_WITHIN = 0.5  # seconds a check or a call waits for a probe in flight before the last answer stands


class Readiness:
    def __init__(
        self,
        ping: Callable[[], Awaitable[None]],
        *,
        fresh_for: float = FRESH_FOR,
        answer_within: float = ANSWER_WITHIN,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._ping = ping
        self._fresh_for = fresh_for
        self._answer_within = answer_within
        self._clock = clock
        self._ready = True  # the store was reachable when it was opened
        self._known_at: float | None = None  # when the answer was last known (monotonic); None: never probed
        self._marks = 0  # calls that found the store down: a probe begun before one cannot clear it
        self._probe: asyncio.Task[bool] | None = None
        self._changed = asyncio.Event()  # set, and replaced, at each change
        self._known_down = False  # the listeners were told, and the store was not found back since
        self._on_down: list[Callable[[], None]] = []
        self._confirming: set[asyncio.Task[None]] = set()  # held so that they are not collected mid-way

    async def ready(self) -> bool:
        """Whether the store can be reached: the last answer while it is fresh and no probe runs,
        else a probe's, waited for at most ANSWER_WITHIN (the last answer then)."""
        if self._probe is None and self._fresh():
            return self._ready
        return await self._probed()

    async def refuses(self) -> bool:
        """Whether a call must be refused at once: the store is known down (and a probe, if one was
        due, did not find it back within ANSWER_WITHIN). While it is up, this never waits."""
        if self._ready:
            return False
        return not await self.ready()

    def mark_down(self) -> None:
        """A call found the store unavailable: not ready at once, and a probe to confirm it. Nothing
        new while it is down already (a call refused for it tells nothing)."""
        if not self._ready:
            return
        self._marks += 1
        self._set(ready=False, at=self._clock())
        self._start_probe()

    def suspect(self) -> None:
        """Something saw a connection to the store end: probe now, whatever the last answer."""
        self._start_probe()

    @property
    def known_down(self) -> bool:
        """Whether the store is known down: the `on_down` listeners were called, and no probe has
        found it back since."""
        return self._known_down

    def on_down(self, callback: Callable[[], None]) -> None:
        """`callback` is called each time the store becomes known down: marked down and not found
        back by the probe that followed (within ANSWER_WITHIN), or found down by a probe."""
        self._on_down.append(callback)

    async def _confirm_down(self) -> None:
        if self._known_down or await self.ready():
            return  # told already, or a mark the probe cleared
        self._known_down = True
        for callback in self._on_down:
            callback()

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

    def _fresh(self) -> bool:
        return self._known_at is not None and self._clock() - self._known_at < self._fresh_for

    async def _probed(self) -> bool:
        probe = self._start_probe()
        try:
            async with asyncio.timeout(self._answer_within):
                # Shielded: a check whose client left, or that stopped waiting, must not cancel
                # the probe others wait for.
                return await asyncio.shield(probe)
        except TimeoutError:
            return self._ready

    def _start_probe(self) -> asyncio.Task[bool]:
        if self._probe is None:
            self._probe = asyncio.get_running_loop().create_task(self._run_probe())
        return self._probe

    async def _run_probe(self) -> bool:
        marks = self._marks
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
        if ready and self._marks != marks:
            return False  # a call found the store down while this probe ran: that stands, until the next
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
            log.warning(
                "the store cannot be reached: not ready (/readyz and gRPC health answer so, calls are refused"
                " at once, watches end)"
            )
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()
        if ready:
            self._known_down = False
        elif self._on_down:
            # One task an outage, whatever the watches: it waits, as a check would, for the probe.
            confirming = asyncio.get_running_loop().create_task(self._confirm_down())
            self._confirming.add(confirming)
            confirming.add_done_callback(self._confirming.discard)
