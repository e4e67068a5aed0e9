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

Streams that end unfinished. A writer waits on its stream's buffer, but
nothing released it when the stream went away: not a reset from the client,
not the connection closing. A stalled stream's call then waited forever and
held its place among the streams in flight. And an application that ended
before finishing its answer (a stream given up on as stalled) left its HTTP/2
stream open and its HTTP/1.1 connection waiting for a body that would never
end. Now a stream's buffer is released whenever the stream closes, an HTTP/2
stream whose answer was not finished is reset (CANCEL), and an HTTP/1.1
connection whose answer was not finished is closed.

Idle connections closed at shutdown under a request. On SIGTERM each idle
connection is closed, by a task that waits for the shutdown with
`asyncio.wait_for`; a request arriving on it cancels that task. But Python
3.11's wait_for loses a cancellation that comes as its wait ends, so a request
read in the same turn as the shutdown had its connection closed under it: its
call, already running (even committed), was cut without an answer. The wait
now uses `asyncio.timeout`, whose cancellation always lands. And a request
whose bytes were read while the close was under way (a connection accepted in
the instant of the shutdown) was still started, then cut: once the close of an
idle connection has begun, what is read from it is dropped, so such a request
goes unanswered, never half-served.

The sender's order. Each HTTP/2 connection's sender asked RFC 7540's priority tree
for the next stream to serve, a walk over every stream of the connection with
nothing to send: with many watches on one connection, every message paid for all
of them. A connection's streams with data now take turns (server/h2_sending.py).

A full request queue after the application ended. What a client sends on a
stream waits in a queue of ten messages for the application to receive it; the
connection reads nothing more while it is full. Once the application has ended
nobody receives, so a stream whose client had sent more than it was read
(a reflection session whose answers the client never took) stopped its whole
connection for good, its closing included. What arrives for an application
that has ended is now dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import weakref
from collections.abc import Awaitable, Callable
from functools import partial
from importlib.metadata import version
from typing import Any

import h2.errors
import h2.events
import h2.exceptions
import h11
from hypercorn.asyncio import task_group
from hypercorn.asyncio.tcp_server import TCPServer
from hypercorn.config import Config
from hypercorn.events import Closed, Event, RawData, Updated
from hypercorn.protocol import ProtocolWrapper
from hypercorn.protocol.h2 import BUFFER_LOW_WATER, H2Protocol, StreamBuffer
from hypercorn.protocol.h11 import H11Protocol

from zkplatform.server.h2_sending import RoundRobin

log = logging.getLogger(__name__)

FIXED_VERSION = "0.18.0"  # the version this was written for and tested with
_applied = False


def apply() -> None:
    """Guard hypercorn's HTTP/2 event loop against data for closed streams, let idle
    cleartext HTTP/2 connections close, bound each stream's response buffer, end
    the streams and connections of unfinished answers, and serve a connection's
    streams in turn (server/h2_sending.py) (idempotent)."""
    global _applied  # noqa: PLW0603 # the class is patched once per process
    if _applied:
        return
    if version("hypercorn") != FIXED_VERSION:
        log.warning(
            "hypercorn is not %s: its HTTP/2 fixes are not applied; see zkplatform/server/hypercorn_fix.py",
            FIXED_VERSION,
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

    h2_init = H2Protocol.__init__

    def init_round_robin(self: H2Protocol, *args: Any, **kwargs: Any) -> None:
        h2_init(self, *args, **kwargs)
        self.priority = RoundRobin()  # type: ignore[assignment] # what the sender asks of it, and no more

    H2Protocol.__init__ = init_round_robin  # type: ignore[method-assign]
    StreamBuffer.pop = _pop  # type: ignore[method-assign]
    _release_closed_streams()
    TCPServer._idle_timeout = _idle_timeout  # type: ignore[method-assign] # noqa: SLF001
    _drop_data_once_closing()
    task_group.TaskGroup.spawn_app = _spawn_app  # type: ignore[method-assign]
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


def _release_closed_streams() -> None:
    close_stream = H2Protocol._close_stream  # noqa: SLF001 # the method being fixed

    async def close_stream_and_release(self: H2Protocol, stream_id: int) -> None:
        await close_stream(self, stream_id)
        buffer = self.stream_buffers.get(stream_id)
        if buffer is None or buffer._complete:  # noqa: SLF001 # an answer that ended: the sender finishes it
            return
        await buffer.close()  # a writer waiting on it returns, and its next write is dropped
        if not self.closed:
            with contextlib.suppress(h2.exceptions.H2Error):  # reset or ended by the client already
                self.connection.reset_stream(stream_id, error_code=h2.errors.ErrorCodes.CANCEL)
            # The sender meets the closed stream and forgets its buffer.
            self.priority.unblock(stream_id)
            await self.has_data.set()
            await self._flush()

    H2Protocol._close_stream = close_stream_and_release  # type: ignore[method-assign] # noqa: SLF001

    maybe_recycle = H11Protocol._maybe_recycle  # noqa: SLF001

    async def close_unfinished(self: H11Protocol) -> None:
        unfinished = self.connection.our_state is h11.SEND_BODY
        await maybe_recycle(self)
        if unfinished:  # the client would wait for the rest of an answer that will not come
            await self.send(Closed())

    H11Protocol._maybe_recycle = close_unfinished  # type: ignore[method-assign] # noqa: SLF001


async def _spawn_app(
    self: task_group.TaskGroup,
    app: Any,  # hypercorn's AppWrapper
    config: Config,
    scope: Any,
    send: Callable[[Any], Awaitable[None]],
) -> Callable[[Any], Awaitable[None]]:
    """TaskGroup.spawn_app, whose queue takes nothing more, and holds no reader back, once the application ended."""
    channel = _AppChannel(asyncio.Queue(config.max_app_queue_size), send, self._loop)
    self.spawn(
        task_group._handle,  # noqa: SLF001 # the original's application runner
        app,
        config,
        scope,
        channel.queue.get,
        channel.send,
        partial(self._loop.run_in_executor, None),
        channel.call_soon,
    )
    return channel.put


class _AppChannel:
    """What passes between a stream and its application: what the client sends, queued until the
    application ends, and what the application sends, which tells when it has ended."""

    __slots__ = ("_loop", "_send", "ended", "queue")

    def __init__(self, queue: asyncio.Queue[Any], send: Callable[[Any], Awaitable[None]], loop: Any) -> None:
        self.queue = queue
        self._send = send
        self._loop = loop
        self.ended = False

    def send(self, message: Any) -> Awaitable[None]:
        if message is None:  # the application has ended (and closing its stream puts a disconnect)
            self.ended = True
            while not self.queue.empty():  # a reader waiting for room goes on
                self.queue.get_nowait()
        return self._send(message)

    async def put(self, message: Any) -> None:
        if not self.ended:
            await self.queue.put(message)

    def call_soon(self, func: Callable[..., Any], *args: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(func(*args), self._loop).result()


async def _idle_timeout(self: TCPServer) -> None:
    """TCPServer._idle_timeout, waiting with asyncio.timeout: a request that cancels it is never
    closed under; and nothing read once the close has begun starts a request."""
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(self.config.keep_alive_timeout):
            await self.context.terminated.wait()
    _closing.add(self.protocol)
    await asyncio.shield(self._initiate_server_close())


# The connections whose idle close has begun (weakly held: a connection's end forgets it).
_closing: weakref.WeakSet[ProtocolWrapper] = weakref.WeakSet()


def _drop_data_once_closing() -> None:
    handle = ProtocolWrapper.handle

    async def handle_unless_closing(self: ProtocolWrapper, event: Event) -> None:
        if isinstance(event, RawData) and self in _closing:
            return
        await handle(self, event)

    ProtocolWrapper.handle = handle_unless_closing  # type: ignore[method-assign]
