"""Nothing is written to a client that has gone, nor waits for long on one that stopped reading.

Over HTTP/2, hypercorn 0.18 never returns from a send to a stream whose
connection has closed: it waits for a buffer that nothing will drain. A call
whose client left (mid-body, mid-call, mid-stream) would then wait forever to
write its answer, holding its task, its memory and its place among the calls
in flight. Once the request's receive has said `http.disconnect`, the call's
remaining writes are dropped, so it ends as soon as connectrpc has noticed.

A client still connected may also stop reading: a send then waits for the
buffers between us to drain (HTTP/2 flow control, the socket's buffer), which
holds at most one message of the call, but for as long as the client likes.
A send that waits `stall_seconds` gives the call up: it ends at once, the
HTTP/2 stream is reset or the HTTP/1.1 connection closed (hypercorn_fix.py).
A watch ended so resumes from the last cursor its client read.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from connectrpc.code import Code

from zkplatform.asgi import ASGIApp, Message, Receive, Scope, Send
from zkplatform.observability.calls import note_code

log = logging.getLogger(__name__)


class ClientStalled(Exception):  # a condition, raised through the application to end it
    """A send waited longer than the stall bound for its client to take data."""


class ClientGone:
    def __init__(self, app: ASGIApp, stall_seconds: float) -> None:
        self._app = app
        self._stall_seconds = stall_seconds

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        gone = False

        async def receive_noting_departure() -> Message:
            nonlocal gone
            message = await receive()
            gone = gone or message["type"] == "http.disconnect"
            return message

        async def send_unless_gone(message: Message) -> None:
            nonlocal gone
            if gone:
                return
            try:
                async with asyncio.timeout(self._stall_seconds):
                    await send(message)
            except TimeoutError:
                gone = True
                note_code(Code.CANCELED, f"the client took nothing of the answer for {self._stall_seconds:g} s")
                raise ClientStalled from None

        # An unfinished answer: returning lets the server reset its stream.
        with contextlib.suppress(ClientStalled):
            await self._app(scope, receive_noting_departure, send_unless_gone)
