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

import contextlib

from connectrpc.code import Code

from zkplatform.asgi import ASGIApp, Message, Receive, Scope, Send
from zkplatform.observability.calls import note_code
from zkplatform.rpc.front.unread import ClientStalled, Unread


class ClientGone:
    def __init__(self, app: ASGIApp, unread: Unread) -> None:
        self._app = app
        self._unread = unread

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        gone = False
        given_up = ""  # why, once the call is given up
        client = scope.get("client")
        connection = tuple(client) if client else None  # the peer's address and port: one connection

        async def receive_noting_departure() -> Message:
            nonlocal gone
            message = await receive()
            gone = gone or message["type"] == "http.disconnect"
            return message

        async def send_unless_gone(message: Message) -> None:
            nonlocal gone, given_up
            if given_up:
                raise ClientStalled(given_up)
            if gone:
                return
            try:
                # A message refused for want of room returns here, and the call unwinds from
                # its next write: what the call built is freed as its frames return, instead
                # of being held by the exception's traceback on its way out.
                given_up = await self._unread.send(send, message, connection)
            except ClientStalled as stalled:
                given_up = str(stalled)
                raise

        with contextlib.suppress(ClientStalled):  # the answer unfinished: the server resets its stream
            await self._app(scope, receive_noting_departure, send_unless_gone)
        if given_up:  # the last word on the call, whatever its layers made of it on their way out
            note_code(Code.CANCELED, given_up)
