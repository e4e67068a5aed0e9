"""A stream whose requests come whenever its client likes must send its first one in time.

A reflection session reads its requests as they come, so it passes around
RequestBody's bound on the whole body. But a session that never sends a request
(its HEADERS only) would hold its place among the streams for good: eleven
connections of a hundred such sessions once held every place (issue 39). Its
first message (a 5-byte prefix, flags and big-endian length, then the payload)
must arrive within the bound; afterwards the session is its client's to pace.
"""

from __future__ import annotations

import asyncio
import struct

from connectrpc.code import Code

from zkplatform.asgi import ASGIApp, Message, Receive, Scope, Send
from zkplatform.rpc.errors import refusal
from zkplatform_api.platform.v1.errors_pb2 import ErrorReason

_PREFIX = 5


class FirstMessage:
    def __init__(self, app: ASGIApp, timeout_seconds: float) -> None:
        self._app = app
        self._timeout = timeout_seconds

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        deadline = asyncio.get_running_loop().time() + self._timeout
        head = b""  # the first message's prefix, as far as it came
        left: int | None = None  # bytes of the first message still to come, once its prefix is in
        arrived = False

        async def receive_first_in_time() -> Message:
            nonlocal head, left, arrived
            if arrived:
                return await receive()
            try:
                async with asyncio.timeout_at(deadline):
                    message = await receive()
            except TimeoutError:
                late = f"the stream's first message did not arrive within {self._timeout:g} s"
                raise refusal(Code.DEADLINE_EXCEEDED, ErrorReason.BODY_READ_TIMEOUT, late) from None
            body = message.get("body", b"") if message["type"] == "http.request" else b""
            if left is None:
                taken = body[: _PREFIX - len(head)]
                head, body = head + taken, body[len(taken) :]
                if len(head) == _PREFIX:
                    left = struct.unpack(">I", head[1:])[0]
            if left is not None:
                left -= len(body)
            more = message["type"] == "http.request" and message.get("more_body", False)
            arrived = (left is not None and left <= 0) or not more
            return message

        await self._app(scope, receive_first_in_time, send)
