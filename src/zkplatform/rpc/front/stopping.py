"""Once the server is stopping, every HTTP/1.1 answer closes its connection.

A keep-alive connection answered while the server stops would otherwise look
reusable: the client's next request goes out on a connection the server closes
as soon as it is idle, and that request is lost, sent but never answered.
With `Connection: close` on the answer, the client opens a new connection for
its next request, which the stopping server refuses before anything is sent:
clearly safe to send again, to a server that stays.
"""

from __future__ import annotations

from zkplatform.asgi import ASGIApp, Message, Receive, Scope, Send

_CLOSE = (b"connection", b"close")


class CloseWhenStopping:
    def __init__(self, app: ASGIApp) -> None:
        self._app = app
        self.stopping = False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["http_version"] == "2":  # HTTP/2 has its own GOAWAY, which hypercorn sends
            await self._app(scope, receive, send)
            return

        async def send_closing(message: Message) -> None:
            if self.stopping and message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", ()), _CLOSE]}
            await send(message)

        await self._app(scope, receive, send_closing)
