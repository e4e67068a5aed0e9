"""Nothing is written to a client that has gone.

Over HTTP/2, hypercorn 0.18 never returns from a send to a stream whose
connection has closed: it waits for a buffer that nothing will drain. A call
whose client left (mid-body, mid-call, mid-stream) would then wait forever to
write its answer, holding its task, its memory and its place among the calls
in flight. Once the request's receive has said `http.disconnect`, the call's
remaining writes are dropped, so it ends as soon as connectrpc has noticed.
"""

from __future__ import annotations

from zkplatform.asgi import ASGIApp, Message, Receive, Scope, Send


class ClientGone:
    def __init__(self, app: ASGIApp) -> None:
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        gone = False

        async def receive_noting_departure() -> Message:
            nonlocal gone
            message = await receive()
            gone = gone or message["type"] == "http.disconnect"
            return message

        async def send_unless_gone(message: Message) -> None:
            if not gone:
                await send(message)

        await self._app(scope, receive_noting_departure, send_unless_gone)
