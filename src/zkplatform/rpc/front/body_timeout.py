"""A request body must arrive within a bound, so a client that stalls half-way holds nothing for long.

The call's own deadline (Connect-Timeout-Ms, grpc-timeout) is connectrpc's; this
is the server's bound for calls that set none, or a longer one.
"""

from __future__ import annotations

import asyncio

from connectrpc.code import Code
from connectrpc.errors import ConnectError

from zkplatform.asgi import ASGIApp, Message, Receive, Scope, Send


class BodyTimeout:
    def __init__(self, app: ASGIApp, seconds: float) -> None:
        self._app = app
        self._seconds = seconds

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        deadline = asyncio.get_running_loop().time() + self._seconds
        body_done = False

        async def receive_in_time() -> Message:
            nonlocal body_done
            if body_done:  # after the body, only a disconnect can come, whenever it likes
                return await receive()
            try:
                async with asyncio.timeout_at(deadline):
                    message = await receive()
            except TimeoutError:
                stalled = f"the request body did not arrive within {self._seconds:g} s"
                raise ConnectError(Code.DEADLINE_EXCEEDED, stalled) from None
            body_done = message["type"] != "http.request" or not message.get("more_body", False)
            return message

        await self._app(scope, receive_in_time, send)
