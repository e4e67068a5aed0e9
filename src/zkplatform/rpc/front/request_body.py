"""A request body must arrive within a bound, and is read to its end before the answer starts.

The bound: a client that stalls half-way holds nothing for long (refused at most a
sweeper's period past it: see RequestBody). The call's own
deadline (Connect-Timeout-Ms, grpc-timeout) is connectrpc's; this is the
server's bound for calls that set none, or a longer one.

The end: a call refused before its body was read (no token, a body over the
limit) would be answered while its client is still sending. HTTP/1.1 clients
take such an early answer badly (Node's closes the socket and reports the
write's EPIPE instead of the answer), so the rest of the body is read and
dropped first, up to DRAIN_LIMIT bytes and within the same bound, and never
past the call's own deadline: a call that ran out of time while its body
stalled is answered at its deadline, not at the end of the bound.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable
from typing import Final

from connectrpc.code import Code
from connectrpc.errors import ConnectError

from zkplatform.asgi import ASGIApp, Message, Receive, Scope, Send
from zkplatform.rpc.errors import refusal
from zkplatform.rpc.front.sweeper import Sweeper
from zkplatform.rpc.internals import GRPCServerProtocol, negotiate_server_protocol
from zkplatform_api.platform.v1.errors_pb2 import ErrorReason

DRAIN_LIMIT: Final = 1024 * 1024  # bytes of an unread body read and dropped, at most
_GRPC_TIMEOUT_UNIT_SECONDS: Final = {"H": 3600.0, "M": 60.0, "S": 1.0, "m": 1e-3, "u": 1e-6, "n": 1e-9}


class RequestBody:
    def __init__(self, app: ASGIApp, timeout_seconds: float) -> None:
        self._app = app
        self._timeout = timeout_seconds
        self._stalled = f"the request body did not arrive within {timeout_seconds:g} s"
        # The receives waiting for a body, and when each must give up: one sweeper per worker,
        # running while any waits, finds those past it, rather than a timer armed for each call
        # (most bodies are in hand by the time they are asked for).
        self._waiting: dict[asyncio.Task[object], float] = {}
        self._late: set[asyncio.Task[object]] = set()
        # A body is refused at most a period after its bound: a quarter of it, or a second for a longer one.
        self._sweeper = Sweeper(min(1.0, timeout_seconds / 4), self._cancel_late)

    def __call__(self, scope: Scope, receive: Receive, send: Send) -> Awaitable[None]:
        reading = _Reading(self, scope, receive, send)
        return self._app(scope, reading.receive, reading.send)

    async def receive_in_time(self, receive: Receive, deadline: float) -> Message:
        task: asyncio.Task[object] = asyncio.current_task()  # type: ignore[assignment] # always in a task
        self._waiting[task] = deadline
        self._sweeper.start()
        try:
            return await receive()
        except asyncio.CancelledError:
            if task not in self._late:
                raise
            task.uncancel()
            raise refusal(Code.DEADLINE_EXCEEDED, ErrorReason.BODY_READ_TIMEOUT, self._stalled) from None
        finally:
            del self._waiting[task]
            self._late.discard(task)

    def _cancel_late(self, now: float) -> bool:
        """Cancel the receives past their deadline; False once none waits."""
        if not self._waiting:
            return False
        for task, deadline in list(self._waiting.items()):
            if deadline <= now and task not in self._late:
                self._late.add(task)
                task.cancel()
        return True


class _Reading:
    """One call's body as it is read, and its answer held until the body is in."""

    __slots__ = ("_body", "_deadline", "_receive", "_scope", "_send", "_started", "done")

    def __init__(self, body: RequestBody, scope: Scope, receive: Receive, send: Send) -> None:
        self._body = body
        self._scope = scope
        self._receive = receive
        self._send = send
        self._started = asyncio.get_running_loop().time()
        self._deadline = self._started + body._timeout  # noqa: SLF001 # its own middleware's bound
        self.done = False

    def receive(self) -> Awaitable[Message]:
        if self.done:  # after the body, only a disconnect can come, whenever it likes
            return self._receive()
        return self._receive_body()

    async def _receive_body(self) -> Message:
        message = await self._body.receive_in_time(self._receive, self._deadline)
        self.done = message["type"] != "http.request" or not message.get("more_body", False)
        return message

    def send(self, message: Message) -> Awaitable[None]:
        if not self.done and message["type"] == "http.response.start":
            return self._drain_then_send(message)
        return self._send(message)

    async def _drain_then_send(self, message: Message) -> None:
        await _drain(self.receive, _call_deadline(self._scope, self._started))
        await self._send(message)


async def _drain(receive: Receive, call_deadline: float | None) -> None:
    budget = DRAIN_LIMIT
    # Either bound passing leaves the rest unread: the server closes the connection.
    with contextlib.suppress(ConnectError, TimeoutError):
        async with asyncio.timeout_at(call_deadline):
            while budget >= 0:
                message = await receive()
                if message["type"] != "http.request" or not message.get("more_body", False):
                    return
                budget -= len(message.get("body", b""))


def _call_deadline(scope: Scope, now: float) -> float | None:
    """When the call's own deadline passes, as connectrpc reads it (Connect-Timeout-Ms, or
    grpc-timeout for gRPC and gRPC-Web); None without one, or with one RefuseBadProtocolHeaders
    refuses."""
    headers: dict[bytes, bytes] = {}
    for key, value in scope["headers"]:
        headers.setdefault(key, value)  # connectrpc reads a header's first value
    content_type = headers.get(b"content-type", b"").decode("latin-1")
    if isinstance(negotiate_server_protocol(content_type), GRPCServerProtocol):
        grpc_timeout = headers.get(b"grpc-timeout", b"").decode("latin-1")
        digits, unit = grpc_timeout[:-1], grpc_timeout[-1:]
        if not (1 <= len(digits) <= 8 and digits.isascii() and digits.isdigit() and unit in _GRPC_TIMEOUT_UNIT_SECONDS):
            return None
        return now + int(digits) * _GRPC_TIMEOUT_UNIT_SECONDS[unit]
    timeout_ms = headers.get(b"connect-timeout-ms", b"")
    if not (1 <= len(timeout_ms) <= 10 and timeout_ms.isascii() and timeout_ms.isdigit()):
        return None
    return now + int(timeout_ms) / 1000
