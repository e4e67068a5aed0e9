"""Nothing is written to a client that has gone, nor held for long for one that does not read.

Over HTTP/2, hypercorn 0.18 never returns from a send to a stream whose
connection has closed: it waits for a buffer that nothing will drain. A call
whose client left (mid-body, mid-call, mid-stream) would then wait forever to
write its answer, holding its task, its memory and its place among the calls
in flight. Once the request's receive has said `http.disconnect`, the call's
remaining writes are dropped, so it ends as soon as connectrpc has noticed.

A client still connected may also stop reading: its answers then wait in the
worker, for as long as the client likes. unread.py bounds them (in time, per
connection, per worker) and gives such calls up; the call then ends at once,
logged `canceled`, its answer unfinished.
"""

from __future__ import annotations

from collections.abc import Awaitable, Hashable

from connectrpc.code import Code

from zkplatform.asgi import ASGIApp, Message, Receive, Scope, Send
from zkplatform.observability.calls import note_code
from zkplatform.rpc.front.unread import ClientStalled, Unread


class ClientGone:
    def __init__(self, app: ASGIApp, unread: Unread) -> None:
        self._app = app
        self._unread = unread

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        client = _Client(scope, receive, send, self._unread)
        try:  # noqa: SIM105 # contextlib.suppress: one object more, held for a stream's life
            await self._app(scope, client.receive, client.send)
        except ClientStalled:  # the answer unfinished: the server resets its stream
            pass
        if client.given_up:  # the last word on the call, whatever its layers made of it on their way out
            note_code(Code.CANCELED, client.given_up)


class _Client:
    """One call's client: whether it has gone, and why the call was given up (unread.py's Caller)."""

    __slots__ = ("_receive", "_send", "_unread", "connection", "given_up", "gone")

    def __init__(self, scope: Scope, receive: Receive, send: Send, unread: Unread) -> None:
        self._receive = receive
        self._send = send
        self._unread = unread
        client = scope.get("client")
        # The peer's address and port: one connection.
        self.connection: Hashable | None = tuple(client) if client else None
        self.gone = False
        self.given_up = ""  # why, once the call is given up

    async def receive(self) -> Message:
        message = await self._receive()
        self.gone = self.gone or message["type"] == "http.disconnect"
        return message

    def send(self, message: Message) -> Awaitable[None]:
        if self.given_up:
            raise ClientStalled(self.given_up)
        if self.gone:
            return _dropped()
        # A message refused for want of room returns, and the call unwinds from its next write:
        # what the call built is freed as its frames return, instead of being held by the
        # exception's traceback on its way out.
        return self._unread.send(self._send, message, self)


async def _dropped() -> None:
    """A write to a client that has gone: nothing."""
