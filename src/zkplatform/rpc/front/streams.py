"""Streaming calls in flight: how many may be open, and ending them at shutdown.

A stream (WatchChanges, a health Watch, a reflection session) may stay open for
as long as its client likes. Each holds a task and its buffers, so a budget
bounds how many are open at once, on the worker and on one connection; beyond,
a stream answers `resource_exhausted` with RetryInfo. Streams that need no
token (health, reflection) have a budget of their own, apart from those that
need one (WatchChanges): anyone who can reach the port could otherwise take
every place and starve the platform's watches (issue 39).

Left alone at shutdown, a stream would hold a graceful shutdown for the whole
grace period and then be cut without a status. `end_all()` ends each open
stream with `unavailable` instead, in its own protocol (an end-of-stream
message for Connect, trailers for gRPC and gRPC-Web), and a stream that arrives
afterwards is answered so at once: clients take `unavailable` as "retry
elsewhere", which the load balancer routes to a server that stays.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from collections.abc import Awaitable, Hashable, Mapping
from dataclasses import dataclass

from connectrpc.code import Code
from connectrpc.compat import google_protobuf_binary_codec
from connectrpc.errors import ConnectError
from connectrpc.request import Headers

from zkplatform.asgi import ASGIApp, Message, Receive, Scope, Send
from zkplatform.observability.calls import note_code
from zkplatform.rpc.errors import RETRY_AFTER_SECONDS, refusal
from zkplatform.rpc.front.answers import content_type_of, send_error
from zkplatform.rpc.internals import ConnectWireError, negotiate_server_protocol
from zkplatform_api.platform.v1.errors_pb2 import ErrorReason

_END_TIMEOUT_S = 2.0
SHUTTING_DOWN = "the server is shutting down; call again (another server will answer)"


def shutting_down() -> ConnectError:
    return refusal(
        Code.UNAVAILABLE, ErrorReason.SERVER_SHUTTING_DOWN, SHUTTING_DOWN, retry_after_seconds=RETRY_AFTER_SECONDS
    )


@dataclass(frozen=True, eq=False, slots=True)
class Budget:
    """The places of some streaming procedures: at most `at_most` open at once on a worker, and
    `per_connection` on one connection (None: no bound of its own)."""

    kind: str  # what the streams are, for the refusal: "streaming calls that need no token"
    at_most: int
    per_connection: int | None = None


class StreamLimits:
    """Middleware in front of the streaming procedures, each path counted against its budget."""

    def __init__(self, app: ASGIApp, budgets: Mapping[str, Budget]) -> None:
        self._app = app
        self._budgets = dict(budgets)
        self._open: Counter[Budget] = Counter()
        self._on_connection: Counter[tuple[Budget, Hashable]] = Counter()
        self._calls: dict[asyncio.Future[None], _Call] = {}
        self._closing = False

    def __len__(self) -> int:
        return len(self._calls)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        call = _Call(scope, send)
        if self._closing:
            await _bounded(call.end())
            return
        budget = self._budgets[scope["path"]]
        client = scope.get("client")
        place = (budget, tuple(client)) if client and budget.per_connection is not None else None
        if (refused := self._refusal(budget, place)) is not None:
            await send_error(send, scope, refused)
            return
        self._open[budget] += 1
        if place is not None:
            self._on_connection[place] += 1
        # The application runs in a task of its own, so that ending the stream
        # cancels the application and not the server's task, which then writes the end.
        served = asyncio.ensure_future(self._app(scope, receive, call.send))
        self._calls[served] = call
        try:
            await served  # a cancellation of the server's task cancels it too
        except asyncio.CancelledError:
            if not call.ending or _being_cancelled():
                raise
        finally:
            self._calls.pop(served, None)
            self._release(budget, place)
        if call.ending:  # only after end_all, which refuses every new stream: the places released stay unused
            await _bounded(call.end())

    def _release(self, budget: Budget, place: tuple[Budget, Hashable] | None) -> None:
        self._open[budget] -= 1
        if place is not None:
            self._on_connection[place] -= 1
            if not self._on_connection[place]:
                del self._on_connection[place]

    def _refusal(self, budget: Budget, place: tuple[Budget, Hashable] | None) -> ConnectError | None:
        if self._open[budget] >= budget.at_most:
            where, limit, then = "on this server", budget.at_most, "retry later"
        elif (
            place is not None
            and budget.per_connection is not None
            and self._on_connection[place] >= budget.per_connection
        ):
            where, limit, then = "on one connection", budget.per_connection, "retry later, or on another connection"
        else:
            return None
        return refusal(
            Code.RESOURCE_EXHAUSTED,
            ErrorReason.STREAM_LIMIT_EXCEEDED,
            f"too many open {budget.kind} {where} (at most {limit}); {then}",
            metadata={"limit": str(limit)},
            retry_after_seconds=RETRY_AFTER_SECONDS,
        )

    def end_all(self) -> None:
        """End every open stream with `unavailable`, and refuse new ones so from now on."""
        self._closing = True
        for served, call in self._calls.items():
            call.ending = True
            served.cancel()


async def _bounded(ending: Awaitable[None]) -> None:
    """Write a stream's end, but not forever: the client may be gone, and a send to a
    stream of a closed HTTP/2 connection never returns."""
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(_END_TIMEOUT_S):
            await ending


def _being_cancelled() -> bool:
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


class _Call:
    """A stream's response as it is written: how far it got, and the send in flight,
    which a cancellation must not cut half-way through a message."""

    __slots__ = ("_pending", "_scope", "_send", "body_done", "ended", "ending", "started", "trailers")

    def __init__(self, scope: Scope, send: Send) -> None:
        self._scope = scope
        self._send = send
        self._pending: asyncio.Future[None] | None = None
        self.started = False
        self.trailers = False  # the response ends with HTTP trailers (gRPC)
        self.body_done = False
        self.ended = False
        self.ending = False

    async def send(self, message: Message) -> None:
        if self.ending:
            return  # the application being cancelled tries to end the stream its own way
        kind = message["type"]
        if kind == "http.response.start":
            self.started, self.trailers = True, bool(message.get("trailers"))
        elif kind == "http.response.body" and not message.get("more_body", False):
            self.body_done = True
            self.ended = not self.trailers
        elif kind == "http.response.trailers":
            self.ended = True
        self._pending = asyncio.ensure_future(self._send(message))
        await asyncio.shield(self._pending)
        self._pending = None  # sent: nothing for end() to wait for (nor to hold while the stream idles)

    async def end(self) -> None:
        """End the response with `unavailable`, as connectrpc ends a stream with an error."""
        if self._pending is not None:
            with contextlib.suppress(Exception):
                await self._pending
        if self.ended:
            return
        self.ended = True
        note_code(Code.UNAVAILABLE)
        content_type = content_type_of(self._scope)
        protocol = negotiate_server_protocol(content_type)
        if not self.started:
            self.trailers = protocol.uses_trailers()
            headers = [(b"content-type", content_type.encode("latin-1") or b"application/grpc")]
            await self._send(
                {"type": "http.response.start", "status": 200, "headers": headers, "trailers": self.trailers}
            )
        error = ConnectWireError.from_exception(shutting_down())
        end = protocol.create_envelope_writer(google_protobuf_binary_codec(), None).end(Headers(), error)
        if isinstance(end, bytes):
            await self._send({"type": "http.response.body", "body": end, "more_body": False})
            return
        if not self.body_done:
            await self._send({"type": "http.response.body", "body": b"", "more_body": False})
        trailers = [(key.encode(), value.encode()) for key, value in end.allitems()]
        await self._send({"type": "http.response.trailers", "headers": trailers, "more_trailers": False})
