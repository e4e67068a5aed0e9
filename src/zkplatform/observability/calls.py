"""The one record of each HTTP call, and the outermost middleware that keeps it.

`ObserveCalls` times every request, takes or makes its request id (echoed in the
answer's `X-Request-Id`), and watches the answer go out. The record (`Call`, in a
ContextVar) holds what the access line and the metrics need and connectrpc's context
does not carry: the request id, the client, the HTTP request itself (for the URL a
DPoP proof must name). Others are told its ending: the error mapping
(rpc/errors.py) and the front's refusals give the final code (`note_code`),
authentication who called (`note_caller`); nothing reads the record to decide a
call (the servicer takes its caller from rpc/call_auth.py). Otherwise the answer's
grpc-status or HTTP status tells the code. The access line then names the procedure,
protocol, code, duration, principal, token id, request id and peer: never the URL's
query, a header's value other than the request id, a token or a payload. The peer is
the client's address: the connection's, or behind a trusted proxy the one it
forwarded (the `client` function given, rpc/origin.py's Origin.client), which the
audit events of the call record too.
"""

from __future__ import annotations

import itertools
import logging
import re
import secrets
import time
from collections.abc import Awaitable, Callable, Collection, Sequence
from contextvars import ContextVar
from typing import Any, Final

from connectrpc.code import Code

from zkplatform.asgi import ASGIApp, Message, Receive, Scope, Send
from zkplatform.domain import tokens
from zkplatform.observability.metrics import Metrics, refusal_reason

access_log = logging.getLogger("zkplatform.access")

REQUEST_ID_HEADER: Final = b"x-request-id"
MAX_REQUEST_ID_LENGTH: Final = 128
_SANE_REQUEST_ID: Final = re.compile(rb"[\x21-\x7e]{1,%d}" % MAX_REQUEST_ID_LENGTH)
UNKNOWN_PROCEDURE: Final = "unknown"  # one label for every unknown path: a scanner cannot grow the series
HEALTHZ: Final = "healthz"
READYZ: Final = "readyz"
_PROBES: Final = {"/healthz": HEALTHZ, "/readyz": READYZ}

# Connect's HTTP status -> code, for answers whose code nobody recorded (connectrpc
# refusing a content type or a protocol version before any interceptor ran).
_HTTP_CODES = {
    400: Code.INVALID_ARGUMENT,
    401: Code.UNAUTHENTICATED,
    403: Code.PERMISSION_DENIED,
    404: Code.UNIMPLEMENTED,
    405: Code.UNIMPLEMENTED,
    408: Code.DEADLINE_EXCEEDED,
    409: Code.ABORTED,
    412: Code.FAILED_PRECONDITION,
    413: Code.RESOURCE_EXHAUSTED,
    415: Code.INTERNAL,
    429: Code.RESOURCE_EXHAUSTED,
    499: Code.CANCELED,
    501: Code.UNIMPLEMENTED,
    503: Code.UNAVAILABLE,
    504: Code.DEADLINE_EXCEEDED,
}
_GRPC_CODES = dict(enumerate(Code, start=1))  # Code lists gRPC's codes 1..16 in order


class Call:
    """What is known of one call so far."""

    __slots__ = (
        "client", "code", "grpc_status", "http_status", "message", "principal_id", "procedure", "request_id",
        "scope", "token_id",
    )  # fmt: skip

    def __init__(self, procedure: str, request_id: str, scope: Scope, client: Sequence[Any] | None = None) -> None:
        self.procedure = procedure
        self.request_id = request_id
        self.scope = scope  # the HTTP request, for what connectrpc's context does not carry (its URL)
        # The client's (address, port), the port None when a proxy forwarded none; None when unknown.
        self.client = client
        self.principal_id = ""  # the caller's, once authenticated ("" until then)
        self.token_id = ""
        self.code: Code | None = None
        self.message = ""  # the error's, read only to label an authentication refusal (metrics.refusal_reason)
        self.grpc_status: str | None = None
        self.http_status = 0

    @property
    def client_address(self) -> str:
        """The client's IP address ("" when unknown): the peer's, or a trusted proxy's forwarded one."""
        return "" if not self.client else str(self.client[0])

    def final_code(self) -> str:
        if self.code is not None:
            return self.code.value
        if self.grpc_status is not None:
            code = _GRPC_CODES.get(int(self.grpc_status)) if self.grpc_status.isdigit() else Code.UNKNOWN
            return "ok" if self.grpc_status == "0" else (code or Code.UNKNOWN).value
        if 200 <= self.http_status < 300:  # 204: a CORS preflight answered (rpc/front/cors.py)
            return "ok"
        return _HTTP_CODES.get(self.http_status, Code.UNKNOWN).value


# Generated request ids: a random prefix per process, then a counter (16 hex digits in all):
# unique across workers and restarts in practice, and no system call per request.
_ID_PREFIX: Final = secrets.token_hex(4)
_ids = itertools.count()

_current: ContextVar[Call] = ContextVar("call")


def current_call() -> Call:
    """The record of the call being served (LookupError outside one)."""
    return _current.get()


def request_id() -> str:
    """The id of the request being served ("" outside one)."""
    call = _current.get(None)
    return "" if call is None else call.request_id


def client_address() -> str:
    """The address of the client of the request being served ("" outside one)."""
    call = _current.get(None)
    return "" if call is None else call.client_address


def note_code(code: Code, message: str = "") -> None:
    """The call being served ends with `code` and that error message."""
    if (call := _current.get(None)) is not None:
        call.code, call.message = code, message


def note_caller(principal_id: str, token_id: str) -> None:
    """The call being served was made by this principal, with this token (for the access line)."""
    if (call := _current.get(None)) is not None:
        call.principal_id, call.token_id = principal_id, token_id


ClientOf = Callable[[Scope], Sequence[Any] | None]


class ObserveCalls:
    """Middleware around every HTTP request: the record, the access line, the metrics.
    `client`: the client's address and port for a request (default: the connection's peer)."""

    def __init__(
        self,
        app: ASGIApp,
        metrics: Metrics | None,
        procedures: Collection[str],
        streams: Collection[str],
        client: ClientOf | None = None,
    ) -> None:
        self._app = app
        self._metrics = metrics
        self._procedures = frozenset(procedures)
        self._streams = frozenset(streams)
        self._client = client
        self.in_flight = 0  # HTTP requests being served, streams included

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        started = time.perf_counter()
        path = scope["path"]
        procedure = path[1:] if path in self._procedures else _PROBES.get(path, UNKNOWN_PROCEDURE)
        request_id, protocol = _read_headers(scope)
        call = Call(procedure, request_id, scope, scope.get("client") if self._client is None else self._client(scope))
        _current.set(call)
        # Only gRPC and gRPC-Web answers carry a grpc-status.
        answer = _Answer(call, send, grpc=protocol != "connect")
        metrics = self._metrics
        stream = path in self._streams
        if metrics is not None:
            metrics.in_flight_of(procedure).inc()
            if stream:
                metrics.streams.inc()
        self.in_flight += 1
        try:
            await self._app(scope, receive, answer.send)
        finally:
            self.in_flight -= 1
            seconds = time.perf_counter() - started
            code = call.final_code()
            if metrics is not None:
                _count_end(metrics, call, protocol, code, seconds, stream=stream)
            if access_log.isEnabledFor(logging.INFO):
                _log_access(scope, call, protocol, code, seconds)


class _Answer:
    """A call's answer as it goes out: its status and grpc-status noted on the call's record,
    its request id echoed."""

    __slots__ = ("_call", "_grpc", "_send")

    def __init__(self, call: Call, send: Send, *, grpc: bool) -> None:
        self._call = call
        self._send = send
        self._grpc = grpc

    def send(self, message: Message) -> Awaitable[None]:
        kind = message["type"]
        if kind == "http.response.start":
            call = self._call
            call.http_status = message["status"]
            headers = message.get("headers", ())
            if self._grpc:
                call.grpc_status = _grpc_status(headers)
            message = {**message, "headers": [*headers, (REQUEST_ID_HEADER, call.request_id.encode())]}
        elif kind == "http.response.trailers":
            self._call.grpc_status = _grpc_status(message.get("headers", ())) or self._call.grpc_status
        return self._send(message)


def _count_end(metrics: Metrics, call: Call, protocol: str, code: str, seconds: float, *, stream: bool) -> None:  # noqa: PLR0913
    metrics.in_flight_of(call.procedure).dec()
    if stream:
        metrics.streams.dec()
    metrics.ended(call.procedure, protocol, code, seconds)
    if call.code is Code.UNAUTHENTICATED:
        metrics.auth_refusals.labels(refusal_reason(call.message)).inc()
    metrics.refresh_pools()


def _log_access(scope: Scope, call: Call, protocol: str, code: str, seconds: float) -> None:
    fields = {
        "procedure": call.procedure,
        "protocol": protocol,
        "code": code,
        "duration_ms": round(seconds * 1000, 3),
        "principal": call.principal_id or "-",
        "token_id": call.token_id or "-",
        "request_id": call.request_id,
        "peer": _peer(call.client),
        "http_method": scope.get("method", ""),
        "http_status": call.http_status,
    }
    access_log.info(_TEXT_LINE, *fields.values(), extra={"access": fields})


_TEXT_LINE: Final = (
    "procedure=%s protocol=%s code=%s duration_ms=%s principal=%s token_id=%s request_id=%s peer=%s"
    " http_method=%s http_status=%s"
)


def _peer(client: Sequence[Any] | None) -> str:
    if not client:
        return "-"
    host, port = client[0], client[1]
    if port is None:  # forwarded without its port
        return str(host)
    return f"[{host}]:{port}" if ":" in str(host) else f"{host}:{port}"


def _read_headers(scope: Scope) -> tuple[str, str]:
    """The call's request id and protocol, from one pass over the request's headers.

    The request id is the client's X-Request-Id when it is sane (one, at most 128
    printable ASCII characters without spaces) and holds no token, otherwise a
    fresh one: the id is logged, echoed and recorded in audit events, where a token
    must never be (rpc/front/leaked_tokens.py revokes it and refuses the request).
    The protocol follows the first Content-Type."""
    given: list[bytes] = []
    content_type: bytes | None = None
    for key, value in scope.get("headers", ()):
        if key == REQUEST_ID_HEADER:
            given.append(value)
        elif key == b"content-type" and content_type is None:
            content_type = value
    if len(given) == 1 and _SANE_REQUEST_ID.fullmatch(given[0]) and not tokens.find_in(given[0].decode("ascii")):
        request_id = str(given[0].decode("ascii"))
    else:
        request_id = f"{_ID_PREFIX}{next(_ids):08x}"
    return request_id, _protocol(content_type)


def _protocol(content_type: bytes | None) -> str:
    if content_type is None:
        return "connect"
    if content_type.startswith(b"application/grpc-web"):
        return "grpc_web"
    if content_type.startswith(b"application/grpc"):
        return "grpc"
    return "connect"


def _grpc_status(headers: Any) -> str | None:
    for key, value in headers:
        if key == b"grpc-status":
            return str(value.decode("latin-1"))
    return None
