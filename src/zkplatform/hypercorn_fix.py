"""A fix for hypercorn 0.18.0's HTTP/2 code, until a release carries it.

When the application answers a call before the client has sent all of its
body (connectrpc refuses a body over the size limit as soon as it passes the
limit, authentication refuses a call before its body is read, and a body that
arrives too slowly is refused at its bound), the rest of the body reaches a
stream hypercorn has already forgotten: `H2Protocol._handle_events` looks the
stream up without a guard, the KeyError kills the whole connection with a
traceback in the log, and every other call on that connection fails with it
(hypercorn issue 329; the fix upstream, pull requests 334 and 365, ignores such
data and still acknowledges it for flow control, as done here).
"""

from __future__ import annotations

import logging
from importlib.metadata import version

import h2.events
from hypercorn.protocol.h2 import H2Protocol

log = logging.getLogger(__name__)

FIXED_VERSION = "0.18.0"  # the version this was written for and tested with
_applied = False


def apply() -> None:
    """Guard hypercorn's HTTP/2 event loop against data for closed streams (idempotent)."""
    global _applied  # noqa: PLW0603 # the class is patched once per process
    if _applied:
        return
    if version("hypercorn") != FIXED_VERSION:
        log.warning("hypercorn is not %s: its HTTP/2 fix is not applied; check hypercorn issue 329", FIXED_VERSION)
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
    _applied = True
