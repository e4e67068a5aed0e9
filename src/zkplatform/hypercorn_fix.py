"""Fixes for hypercorn 0.18.0's HTTP/2 code, until a release carries them.

Data for a closed stream. When the application answers a call before the client has sent all of its
body (connectrpc refuses a body over the size limit as soon as it passes the
limit, authentication refuses a call before its body is read, and a body that
arrives too slowly is refused at its bound), the rest of the body reaches a
stream hypercorn has already forgotten: `H2Protocol._handle_events` looks the
stream up without a guard, the KeyError kills the whole connection with a
traceback in the log, and every other call on that connection fails with it
(hypercorn issue 329; the fix upstream, pull requests 334 and 365, ignores such
data and still acknowledges it for flow control, as done here).

Idle cleartext HTTP/2 connections. A connection is closed once it has been idle
for the keep-alive timeout, but a cleartext HTTP/2 connection with prior
knowledge starts as HTTP/1.1: reading its preface as a request marks the
connection busy, and the switch to HTTP/2 never marks it idle again until a
stream has come and gone. A client that sends only the preface and SETTINGS
kept its connection (and a descriptor) for good. The HTTP/2 side now says it is
idle as it starts, as the TLS path, which starts in HTTP/2, already is.

Unbounded response buffers. A stream's writes wait once its buffer holds two
frames, until the sender takes data out of it. But the sender also "takes"
nothing from a stream whose client grants no window (a stalled reader), and
that empty take released the waiting writer all the same. Each window update
for the connection (any other stream of it being read) retried every stalled
stream, so each let one more message into its buffer: stalled HTTP/2 watchers
made the server buffer every change. A writer is now released only once the
buffer has drained below its low-water mark.
"""

from __future__ import annotations

import logging
from importlib.metadata import version

import h2.events
from hypercorn.events import Updated
from hypercorn.protocol.h2 import BUFFER_LOW_WATER, H2Protocol, StreamBuffer

log = logging.getLogger(__name__)

FIXED_VERSION = "0.18.0"  # the version this was written for and tested with
_applied = False


def apply() -> None:
    """Guard hypercorn's HTTP/2 event loop against data for closed streams, let idle
    cleartext HTTP/2 connections close, and bound each stream's response buffer (idempotent)."""
    global _applied  # noqa: PLW0603 # the class is patched once per process
    if _applied:
        return
    if version("hypercorn") != FIXED_VERSION:
        log.warning(
            "hypercorn is not %s: its HTTP/2 fixes are not applied; see zkplatform/hypercorn_fix.py", FIXED_VERSION
        )
        return
    original = H2Protocol._handle_events  # noqa: SLF001 # the method being fixed

    async def handle_events(self: H2Protocol, events: list[h2.events.Event]) -> None:
        if not any(isinstance(event, h2.events.DataReceived) for event in events):
            await original(self, events)  # headers, settings, window updates: as they were
            return
        # One event at a time: handling one may close a stream the next one names.
        for event in events:
            if isinstance(event, h2.events.DataReceived) and event.stream_id not in self.streams:
                self.connection.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
                continue
            await original(self, [event])

    H2Protocol._handle_events = handle_events  # type: ignore[method-assign] # noqa: SLF001

    initiate = H2Protocol.initiate

    async def initiate_idle(
        self: H2Protocol, headers: list[tuple[bytes, bytes]] | None = None, settings: bytes | None = None
    ) -> None:
        await initiate(self, headers, settings)
        if not self.streams:  # an upgrade from HTTP/1.1 starts with its request's stream
            await self.send(Updated(idle=True))

    H2Protocol.initiate = initiate_idle  # type: ignore[method-assign]
    StreamBuffer.pop = _pop  # type: ignore[method-assign]
    _applied = True


async def _pop(self: StreamBuffer, max_length: int) -> bytes:
    """StreamBuffer.pop, releasing a waiting writer only once the buffer is below its low-water mark."""
    length = min(len(self.buffer), max_length)
    data = bytes(self.buffer[:length])
    del self.buffer[:length]
    if len(self.buffer) < BUFFER_LOW_WATER:
        await self._paused.set()  # the class being fixed
    if len(self.buffer) == 0:
        await self._is_empty.set()
    return data
