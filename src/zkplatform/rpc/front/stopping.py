"""Once the server is stopping, every HTTP/1.1 answer closes its connection.

A keep-alive connection answered while the server stops would otherwise look
reusable: the client's next request goes out on a connection the server closes
as soon as it is idle, and that request is lost, sent but never answered.
With `Connection: close` on the answer, the client opens a new connection for
its next request, which the stopping server refuses before anything is sent:
clearly safe to send again, to a server that stays.
"""

from __future__ import annotations

from collections.abc import Awaitable

from zkplatform.asgi import ASGIApp, Message, Receive, Scope, Send

_CLOSE = (b"connection", b"close")


class CloseWhenStopping:
    def __init__(self, app: ASGIApp) -> None:
        self._app = app
        self.stopping = False

    def __call__(self, scope: Scope, receive: Receive, send: Send) -> Awaitable[None]:
        if scope["http_version"] == "2":  # HTTP/2 has its own GOAWAY, which hypercorn sends
            return self._app(scope, receive, send)
        return self._app(scope, receive, _Closing(self, send).send)


class _Closing:
    """One HTTP/1.1 answer: its start closes the connection if the server is stopping by then."""

    __slots__ = ("_layer", "_send")

    def __init__(self, layer: CloseWhenStopping, send: Send) -> None:
        self._layer = layer
        self._send = send

    def send(self, message: Message) -> Awaitable[None]:
        if self._layer.stopping and message["type"] == "http.response.start":
            message = {**message, "headers": [*message.get("headers", ()), _CLOSE]}
        return self._send(message)
