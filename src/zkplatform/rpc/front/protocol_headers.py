"""The protocol headers connectrpc refuses before any interceptor runs, refused here with their reason.

connectrpc checks `Connect-Protocol-Version` (a value other than 1),
`Connect-Timeout-Ms` and `grpc-timeout` while it sets a call up, and answers a
bad one at once: ErrorMapping (rpc/errors.py) never sees it, so the answer
would carry no ErrorInfo. The same checks run here first, as connectrpc 0.13
makes them (rpc/internals.py names the pin), and refuse in the request's
protocol with the reason. A GET whose query is not UTF-8, which connectrpc
fails on with an exception, is refused here too.
"""

from __future__ import annotations

from typing import Final

from connectrpc.code import Code
from connectrpc.errors import ConnectError

from zkplatform.asgi import ASGIApp, Receive, Scope, Send
from zkplatform.rpc.errors import refusal
from zkplatform.rpc.front.answers import send_error
from zkplatform.rpc.internals import GRPCServerProtocol, negotiate_server_protocol
from zkplatform_api.platform.v1.errors_pb2 import ErrorReason

_GRPC_TIMEOUT_UNITS: Final = frozenset("HMSmun")


class RefuseBadProtocolHeaders:
    def __init__(self, app: ASGIApp) -> None:
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (refused := _refusal(scope)) is not None:
            await send_error(send, scope, refused)
            return
        await self._app(scope, receive, send)


def _refusal(scope: Scope) -> ConnectError | None:
    headers: dict[bytes, bytes] = {}
    for key, value in scope["headers"]:
        headers.setdefault(key, value)  # connectrpc reads a header's first value
    content_type = headers.get(b"content-type", b"").decode("latin-1")
    if isinstance(negotiate_server_protocol(content_type), GRPCServerProtocol):  # gRPC and gRPC-Web
        timeout = headers.get(b"grpc-timeout")
        if timeout is not None and not _is_grpc_timeout(timeout):
            return _bad_header("grpc-timeout", f"malformed grpc-timeout {_shown(timeout)}")
        return None
    version = headers.get(b"connect-protocol-version")
    if version is not None and version != b"1":
        message = f"Connect-Protocol-Version must be 1, not {_shown(version)}"
        return refusal(Code.INVALID_ARGUMENT, ErrorReason.PROTOCOL_VERSION_INVALID, message)
    timeout = headers.get(b"connect-timeout-ms")
    if timeout and not (len(timeout) <= 10 and timeout.isascii() and timeout.isdigit()):
        return _bad_header("connect-timeout-ms", "Connect-Timeout-Ms must be at most 10 digits")
    if scope["method"] == "GET" and not scope.get("query_string", b"").isascii():
        try:
            scope["query_string"].decode()
        except UnicodeDecodeError:
            return refusal(Code.INVALID_ARGUMENT, ErrorReason.REQUEST_MALFORMED, "the query is not valid UTF-8")
    return None


def _is_grpc_timeout(value: bytes) -> bool:
    """At most 8 digits and a unit (the gRPC over HTTP/2 specification)."""
    digits, unit = value[:-1], value[-1:].decode("latin-1")
    return 1 <= len(digits) <= 8 and digits.isascii() and digits.isdigit() and unit in _GRPC_TIMEOUT_UNITS


def _bad_header(name: str, message: str) -> ConnectError:
    return refusal(Code.INVALID_ARGUMENT, ErrorReason.HEADER_INVALID, message, metadata={"header": name})


def _shown(value: bytes) -> str:
    """A header's value as a message may quote it: short, and printable."""
    text = value[:16].decode("latin-1")
    return repr(text if text.isprintable() else "(unprintable)")
