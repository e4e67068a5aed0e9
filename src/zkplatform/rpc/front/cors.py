"""Cross-origin calls from web pages on the origins the operator lists (ZKPLATFORM_CORS_ORIGINS).

Off unless origins are listed (app.py then leaves this middleware out: no answer carries
an `Access-Control-*` header). On, it answers on every path: the procedures (Connect and
gRPC-Web; gRPC itself never runs in a browser), and the 404 of a procedure this server does
not have, so that a page newer than its server learns `unimplemented` rather than a network
error (the probes' answers say nothing a page could not learn otherwise):

- a preflight (OPTIONS with `Access-Control-Request-Method`) from a listed origin: 204 with
  the methods and request headers the Connect and gRPC-Web protocols need, and those the
  platform reads (Authorization, DPoP, X-Request-Id), cached by the browser for
  MAX_AGE_SECONDS. The answer does not depend on what the preflight asked: the browser
  itself refuses a method or header not listed.
- a preflight from any other origin (or none): 403 without CORS headers, as the Fetch
  standard suggests for a server that means to refuse (section 3.2.3, "the 403 status can be
  used, coupled with omitting the relevant headers"); the browser then sends nothing more.
  connectrpc's Go examples (rs/cors) answer 204 without headers, which browsers refuse
  alike but which reads as a success in a log or with curl.
- any other request from a listed origin: its answer, success or error (401, 429, 503, a
  Connect error body, a gRPC-Web status), carries `Access-Control-Allow-Origin` naming that
  origin and exposes the headers a client reads (grpc-status and its kin, X-Request-Id):
  this middleware stands outside every refusal of the front and of connectrpc, so that a
  page sees why it was refused. From another origin the answer carries none, and the
  browser hides it from the page.

`Access-Control-Allow-Credentials` is never sent: the platform's credentials are the
Authorization and DPoP headers, which a page sends as ordinary request headers; no cookie
or HTTP authentication is involved, so the browser's credentials mode never is either.
`Vary: Origin` is on every answer, since whether it carries the
headers depends on the Origin.
"""

from __future__ import annotations

from collections.abc import Awaitable, Collection
from typing import Final

from zkplatform.asgi import ASGIApp, Message, Receive, Scope, Send

# connectrpc.com/cors (github.com/connectrpc/cors-go, cors.go) AllowedMethods, AllowedHeaders
# and ExposedHeaders, copied as they are; then the platform's own.
CONNECT_ALLOWED_METHODS: Final = ("GET", "POST")
CONNECT_ALLOWED_HEADERS: Final = (
    "Content-Type",
    "Connect-Protocol-Version",
    "Connect-Timeout-Ms",
    "Connect-Accept-Encoding",
    "Connect-Content-Encoding",
    "Accept-Encoding",
    "Content-Encoding",
    "Grpc-Timeout",
    "X-Grpc-Web",
    "X-User-Agent",
)
CONNECT_EXPOSED_HEADERS: Final = (
    "Content-Encoding",
    "Connect-Content-Encoding",
    "Grpc-Status",
    "Grpc-Message",
    "Grpc-Status-Details-Bin",
)
ALLOWED_HEADERS: Final = (*CONNECT_ALLOWED_HEADERS, "Authorization", "DPoP", "X-Request-Id")
EXPOSED_HEADERS: Final = (*CONNECT_EXPOSED_HEADERS, "X-Request-Id")
# Chromium caps a preflight's cache at 2 hours (Firefox at 24): longer would be ignored.
MAX_AGE_SECONDS: Final = 7200

_VARY: Final = (b"vary", b"Origin")
_PREFLIGHT: Final = (
    (b"access-control-allow-methods", ", ".join(CONNECT_ALLOWED_METHODS).encode()),
    (b"access-control-allow-headers", ", ".join(ALLOWED_HEADERS).encode()),
    (b"access-control-max-age", str(MAX_AGE_SECONDS).encode()),
    _VARY,
)
_EXPOSE: Final = (b"access-control-expose-headers", ", ".join(EXPOSED_HEADERS).encode())
_REFUSED: Final = b"cross-origin calls are not allowed from this origin\n"


class Cors:
    """`origins`: the exact origins allowed, as config.parse_cors_origins gives them."""

    def __init__(self, app: ASGIApp, origins: Collection[str]) -> None:
        self._app = app
        self._origins = frozenset(origin.encode() for origin in origins)

    def __call__(self, scope: Scope, receive: Receive, send: Send) -> Awaitable[None]:
        origin, preflight = self._read(scope)
        if preflight:
            return _answer_preflight(send, origin)
        added = (_VARY,) if origin is None else ((b"access-control-allow-origin", origin), _EXPOSE, _VARY)

        def send_with_cors(message: Message) -> Awaitable[None]:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", ()), *added]}
            return send(message)

        return self._app(scope, receive, send_with_cors)

    def _read(self, scope: Scope) -> tuple[bytes | None, bool]:
        """The request's origin when it is allowed (one Origin header, listed), and whether it is a preflight."""
        origins: list[bytes] = []
        asks_method = False
        for key, value in scope["headers"]:
            if key == b"origin":
                origins.append(value)
            elif key == b"access-control-request-method":
                asks_method = True
        allowed = origins[0] if len(origins) == 1 and origins[0] in self._origins else None
        return allowed, asks_method and scope["method"] == "OPTIONS"


async def _answer_preflight(send: Send, origin: bytes | None) -> None:
    if origin is None:
        headers = [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", b"%d" % len(_REFUSED)), _VARY]
        await send({"type": "http.response.start", "status": 403, "headers": headers})
        await send({"type": "http.response.body", "body": _REFUSED})
        return
    headers = [(b"access-control-allow-origin", origin), *_PREFLIGHT]
    await send({"type": "http.response.start", "status": 204, "headers": headers})
    await send({"type": "http.response.body", "body": b""})
