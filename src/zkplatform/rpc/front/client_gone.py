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

Almost every send returns at once, so one sweeper per worker, running while
sends are pending, finds the stalled ones, rather than a timer armed for each.
"""

from __future__ import annotations

import asyncio

from connectrpc.code import Code

from zkplatform.asgi import ASGIApp, Message, Receive, Scope, Send
from zkplatform.observability.calls import note_code


class ClientStalled(BaseException):  # not an error of the call: it unwinds the call
    """A send waited longer than the stall bound for its client to take data. A BaseException,
    as CancelledError is, so that no error handling on the way (connectrpc's, the error
    mapping's `internal`) takes it for a failure to report: it only ends the call."""


class ClientGone:
    def __init__(self, app: ASGIApp, stall_seconds: float) -> None:
        self._app = app
        self._stall_seconds = stall_seconds
        self._sending: dict[asyncio.Task[object], float] = {}  # the sends pending, by task: when each began
        self._stalled: set[asyncio.Task[object]] = set()
        self._sweeper: asyncio.Task[None] | None = None

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
                await self._send_watched(send, message)
            except ClientStalled:
                gone = True
                raise

        try:
            await self._app(scope, receive_noting_departure, send_unless_gone)
        except ClientStalled:
            # The last word on the call, whatever its layers made of the exception on its way out.
            # Returning with the answer unfinished lets the server reset its stream.
            note_code(Code.CANCELED, f"the client took nothing of the answer for {self._stall_seconds:g} s")

    async def _send_watched(self, send: Send, message: Message) -> None:
        task: asyncio.Task[object] = asyncio.current_task()  # type: ignore[assignment] # always in a task
        self._sending[task] = asyncio.get_running_loop().time()
        if self._sweeper is None:
            self._sweeper = asyncio.create_task(self._sweep())
        try:
            await send(message)
        except asyncio.CancelledError:
            if task not in self._stalled:
                raise
            self._stalled.discard(task)
            task.uncancel()
            raise ClientStalled from None
        finally:
            self._sending.pop(task, None)

    async def _sweep(self) -> None:
        """Cancel the sends that have waited the stall bound; ends once a period finds none pending."""
        period = min(1.0, self._stall_seconds / 4)
        loop = asyncio.get_running_loop()
        try:
            while True:
                await asyncio.sleep(period)
                if not self._sending:
                    return
                oldest = loop.time() - self._stall_seconds
                for task, began in list(self._sending.items()):
                    if began <= oldest and task not in self._stalled:
                        self._stalled.add(task)
                        task.cancel()
        finally:
            self._sweeper = None
