"""Requests connectrpc would answer with a 500 and a traceback, refused in a sentence instead.

connectrpc decodes every header as UTF-8 and needs HTTP trailers for gRPC, which
HTTP/1.1 does not have: both fail inside it as unexpected exceptions. A Host
that is malformed or repeated (HTTP/2's `:authority` arrives as the Host) names
no URL a DPoP proof could be checked against (rpc/origin.py): RFC 9112 answers
it 400 on every path, and so does this.
"""

from __future__ import annotations

from collections.abc import Awaitable

from connectrpc.code import Code
from connectrpc.errors import ConnectError

from zkplatform.asgi import ASGIApp, Receive, Scope, Send
from zkplatform.rpc.errors import refusal
from zkplatform.rpc.front.answers import send_error
from zkplatform.rpc.origin import host_refusal
from zkplatform_api.platform.v1.errors_pb2 import ErrorReason

_GRPC_NEEDS_HTTP2 = "gRPC needs HTTP/2; over HTTP/1.1 use the Connect protocol or gRPC-Web"


class RefuseMalformed:
    def __init__(self, app: ASGIApp) -> None:
        self._app = app

    def __call__(self, scope: Scope, receive: Receive, send: Send) -> Awaitable[None]:
        if (refusal := _malformed(scope)) is not None:
            return send_error(send, scope, refusal)
        return self._app(scope, receive, send)


def _malformed(scope: Scope) -> ConnectError | None:
    content_type = b""
    for key, value in scope["headers"]:
        if not (key.isascii() and value.isascii()) and not _is_utf8(key + value):
            named = {"header": key.decode("latin-1")} if key.isascii() else {}
            name = named.get("header", "a request header")
            message = f"malformed request: {name} is not valid UTF-8"
            return refusal(Code.INVALID_ARGUMENT, ErrorReason.HEADER_INVALID, message, metadata=named)
        if key == b"content-type" and not content_type:
            content_type = value
    if (wrong_host := host_refusal(scope["headers"])) is not None:
        message = f"malformed request: {wrong_host}"
        return refusal(Code.INVALID_ARGUMENT, ErrorReason.HEADER_INVALID, message, metadata={"header": "host"})
    grpc = content_type.startswith(b"application/grpc") and not content_type.startswith(b"application/grpc-web")
    if grpc and scope["http_version"] != "2":
        return refusal(Code.UNIMPLEMENTED, ErrorReason.HTTP2_REQUIRED, _GRPC_NEEDS_HTTP2)
    return None


def _is_utf8(raw: bytes) -> bool:
    try:
        raw.decode()
    except UnicodeDecodeError:
        return False
    return True
