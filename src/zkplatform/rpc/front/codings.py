"""Content codings named in any case, as RFC 9110 8.4.1 says they are compared.

connectrpc looks a coding's name up as it came, so `Content-Encoding: GZIP`
would be refused as an unsupported compression. The coding headers' values
are put in lower case before connectrpc reads them; nothing else changes.
"""

from __future__ import annotations

from collections.abc import Awaitable
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

    def __call__(self, scope: Scope, receive: Receive, send: Send) -> Awaitable[None]:
        headers = scope["headers"]
        for name, value in headers:  # a loop, not any(): no generator to run for every call
            if name in _CODING_HEADERS and value != value.lower():
                lowered = [(name, value.lower() if name in _CODING_HEADERS else value) for name, value in headers]
                scope = {**scope, "headers": lowered}
                break
        return self._app(scope, receive, send)
