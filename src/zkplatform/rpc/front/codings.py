"""Content codings named in any case, as RFC 9110 8.4.1 says they are compared.

connectrpc looks a coding's name up as it came, so `Content-Encoding: GZIP`
would be refused as an unsupported compression. The coding headers' values
are put in lower case before connectrpc reads them; nothing else changes.
"""

from __future__ import annotations

from typing import Final

from zkplatform.asgi import ASGIApp, Receive, Scope, Send

# The headers naming a request's coding (Connect unary, Connect streaming, gRPC and
# gRPC-Web), and those naming the codings the client accepts for the answer.
_CODING_HEADERS: Final = frozenset(
    {
        b"content-encoding",
        b"connect-content-encoding",
        b"grpc-encoding",
        b"accept-encoding",
        b"connect-accept-encoding",
        b"grpc-accept-encoding",
    }
)


class LowercaseCodings:
    def __init__(self, app: ASGIApp) -> None:
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = scope["headers"]
        if any(name in _CODING_HEADERS and value != value.lower() for name, value in headers):
            lowered = [(name, value.lower() if name in _CODING_HEADERS else value) for name, value in headers]
            scope = {**scope, "headers": lowered}
        await self._app(scope, receive, send)
