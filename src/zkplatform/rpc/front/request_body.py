"""A request body must arrive within a bound, and is read to its end before the answer starts.

The bound: a client that stalls half-way holds nothing for long. The call's own
deadline (Connect-Timeout-Ms, grpc-timeout) is connectrpc's; this is the
server's bound for calls that set none, or a longer one.

The end: a call refused before its body was read (no token, a body over the
limit) would be answered while its client is still sending. HTTP/1.1 clients
take such an early answer badly (Node's closes the socket and reports the
write's EPIPE instead of the answer), so the rest of the body is read and
dropped first, up to DRAIN_LIMIT bytes and within the same bound.
"""

from __future__ import annotations

import asyncio
from typing import Final

from connectrpc.code import Code
from connectrpc.errors import ConnectError

from zkplatform.asgi import ASGIApp, Message, Receive, Scope, Send
from zkplatform.rpc.errors import refusal
from zkplatform_api.platform.v1.errors_pb2 import ErrorReason

DRAIN_LIMIT: Final = 1024 * 1024  # bytes of an unread body read and dropped, at most


class RequestBody:
    def __init__(self, app: ASGIApp, timeout_seconds: float) -> None:
        self._app = app
        self._timeout = timeout_seconds

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        deadline = asyncio.get_running_loop().time() + self._timeout
        body_done = False

        async def receive_in_time() -> Message:
            nonlocal body_done
            if body_done:  # after the body, only a disconnect can come, whenever it likes
                return await receive()
            try:
                async with asyncio.timeout_at(deadline):
                    message = await receive()
            except TimeoutError:
                stalled = f"the request body did not arrive within {self._timeout:g} s"
                raise refusal(Code.DEADLINE_EXCEEDED, ErrorReason.BODY_READ_TIMEOUT, stalled) from None
            body_done = message["type"] != "http.request" or not message.get("more_body", False)
            return message

        async def send_after_body(message: Message) -> None:
            if not body_done and message["type"] == "http.response.start":
                await _drain(receive_in_time)
            await send(message)

        await self._app(scope, receive_in_time, send_after_body)


async def _drain(receive: Receive) -> None:
    budget = DRAIN_LIMIT
    while budget >= 0:
        try:
            message = await receive()
        except ConnectError:  # the bound passed: the server closes the connection
            return
        if message["type"] != "http.request" or not message.get("more_body", False):
            return
        budget -= len(message.get("body", b""))
