"""The protocol headers of a call, checked before connectrpc sees them: the one place for them.

connectrpc checks `Connect-Protocol-Version` (a value other than 1),
`Connect-Timeout-Ms` and `grpc-timeout` while it sets a call up, and answers a
bad one at once: ErrorMapping (rpc/interceptors/error_mapping.py) never sees it, so the
answer would carry no ErrorInfo. The same checks run here first, as connectrpc 0.13
makes them (rpc/internals.py names the pin), and refuse in the request's
protocol with the reason. A GET whose query is not UTF-8, which connectrpc
fails on with an exception, is refused here too.

The Connect protocol version is checked here whole, missing as well as wrong: connectrpc
accepts a Connect call that does not say its version (and reads no `connect` parameter of a
GET), which the platform's unary procedures refuse (`version_required`; health is probed by
load balancers with whatever they send). A wrong version can only be refused before
connectrpc, so a missing one is refused here too, rather than by an interceptor: where
connectrpc would refuse the call first (415 for a codec it does not serve), it is let through
to say so, as when an interceptor checked it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Collection
from typing import Final
from urllib.parse import parse_qs, parse_qsl

from connectrpc.code import Code
from connectrpc.errors import ConnectError

from zkplatform.asgi import ASGIApp, Receive, Scope, Send
from zkplatform.rpc.errors import refusal
from zkplatform.rpc.front.answers import send_error
from zkplatform.rpc.internals import GRPCServerProtocol, negotiate_server_protocol
from zkplatform_api.platform.v1.errors_pb2 import ErrorReason

_GRPC_TIMEOUT_UNITS: Final = frozenset("HMSmun")
# Content types of Connect unary calls (streaming ones are application/connect+...).
_CONNECT_UNARY_TYPES: Final = ("application/json", "application/proto")


class RefuseBadProtocolHeaders:
    """`version_required`: the paths of the unary procedures whose Connect calls must say their
    protocol version; `codecs`: the names of the codecs connectrpc serves them with."""

    def __init__(self, app: ASGIApp, *, version_required: Collection[str] = (), codecs: Collection[str] = ()) -> None:
        self._app = app
        self._version_required = frozenset(version_required)
        self._codecs = frozenset(codecs)

    def __call__(self, scope: Scope, receive: Receive, send: Send) -> Awaitable[None]:
        headers: dict[bytes, bytes] = {}
        for key, value in scope["headers"]:
            headers.setdefault(key, value)  # connectrpc reads a header's first value
        refused = _refusal(scope, headers)
        if refused is None and scope["path"] in self._version_required:
            refused = _version_missing(scope, headers, self._codecs)
        if refused is not None:
            return send_error(send, scope, refused)
        return self._app(scope, receive, send)


def _version_missing(  # noqa: PLR0911 # one return per answer, in connectrpc's order
    scope: Scope, headers: dict[bytes, bytes], codecs: frozenset[str]
) -> ConnectError | None:
    """A Connect unary call that does not say its protocol version: by the header, or for a GET
    by `connect=v1` in its query, for which the header also stands."""
    if b"connect-protocol-version" in headers:
        return None
    content_type = headers.get(b"content-type", b"").decode("latin-1")
    if isinstance(negotiate_server_protocol(content_type), GRPCServerProtocol):  # gRPC says no version
        return None
    if scope["method"] == "GET":
        query = scope.get("query_string", b"")
        # The codec connectrpc takes a GET's from: one it does not serve is its 415 first.
        if parse_qs(query.decode(), keep_blank_values=True).get("encoding", ("",))[0] not in codecs:
            return None
        versions = [value for key, value in parse_qsl(query.decode("latin-1")) if key == "connect"]
        if versions == ["v1"]:
            return None
        if versions:
            return _version_refused("the query parameter connect must be v1 (once)")
        return _version_refused("missing required query parameter connect=v1 (or header Connect-Protocol-Version: 1)")
    # The codec connectrpc takes a unary call's from (its content type without `application/`).
    if content_type.partition(";")[0].strip().lower().removeprefix("application/") not in codecs:
        return None
    if content_type.lower().startswith(_CONNECT_UNARY_TYPES):
        return _version_refused("missing required header Connect-Protocol-Version: 1")
    return None


def _version_refused(message: str) -> ConnectError:
    return refusal(Code.INVALID_ARGUMENT, ErrorReason.PROTOCOL_VERSION_INVALID, message)


def _refusal(scope: Scope, headers: dict[bytes, bytes]) -> ConnectError | None:
    content_type = headers.get(b"content-type", b"").decode("latin-1")
    if isinstance(negotiate_server_protocol(content_type), GRPCServerProtocol):  # gRPC and gRPC-Web
        timeout = headers.get(b"grpc-timeout")
        if timeout is not None and not _is_grpc_timeout(timeout):
            return _bad_header("grpc-timeout", f"malformed grpc-timeout {_shown(timeout)}")
        return None
    version = headers.get(b"connect-protocol-version")
    if version is not None and version != b"1":
        return _version_refused(f"Connect-Protocol-Version must be 1, not {_shown(version)}")
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
