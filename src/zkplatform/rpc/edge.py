"""The HTTP edge: what happens before a request reaches connectrpc.

- routes each procedure path to its service's Connect application, and answers
  unknown paths 404 `unimplemented` and `GET /healthz` with 200;
- revokes any token it finds in a URL, whatever the path and whatever else is
  wrong with the request: a URL is logged and shared, so the token has leaked
  (the call itself is refused in its turn, as the order of checks says);
- buffers a unary call's body, refusing one over the size limit before anything
  else is looked at (the first check of every call), and one that does not
  arrive within the body read timeout or the call's own deadline. Reading the
  whole body first also sidesteps hypercorn 0.18 dropping an HTTP/2 connection
  when a call is refused before its body was read (hypercorn issue 329);
- refuses what connectrpc would answer with a 500 and a traceback: a header
  that is not UTF-8, gRPC over HTTP/1.1 (which has no trailers);
- then requires `Connect-Protocol-Version` on Connect-protocol calls:
  connectrpc refuses a wrong value but accepts a missing header. gRPC and
  gRPC-Web calls do not use the header;
- lets GET reach only the procedures without side effects (the Connect GET
  form: the message in the query, `connect=v1` standing for the protocol
  header), answering 405 with the methods each procedure allows otherwise;
- bounds streaming calls, which are not buffered: how many are open, how large
  each message may be, how long a message may take to arrive;
- records the URL a DPoP proof must name, which connectrpc's request context
  does not carry (rpc/origin.py says which origin counts behind a proxy);
- at shutdown, ends the open streams with `unavailable` (rpc/streams.py).
"""

from __future__ import annotations

import asyncio
import types
from collections.abc import Awaitable, Callable, Collection, Coroutine, Generator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import parse_qsl

from connectrpc.code import Code
from connectrpc.errors import ConnectError
from google.protobuf import duration_pb2
from google.rpc import error_details_pb2

from zkplatform.asgi import ASGIApp, Message, Receive, Scope, Send
from zkplatform.domain import tokens
from zkplatform.domain.errors import FieldViolation, InvalidArgument
from zkplatform.observability.calls import Observer, note_code
from zkplatform.rpc.details import error_detail
from zkplatform.rpc.errors import to_connect_error
from zkplatform.rpc.internals import ConnectWireError, GRPCServerProtocol, negotiate_server_protocol
from zkplatform.rpc.origin import Origin
from zkplatform.rpc.streams import OpenStreams

RevokeLeaked = Callable[[Sequence[str]], Awaitable[None]]

_DISCARD_LIMIT = 1024 * 1024  # bytes of a refused body read and dropped, at most
_ENVELOPE_PREFIX = 5  # flags, then a big-endian 32-bit length: every streaming protocol frames messages so


class RequestFacts:
    """What the edge saw of the HTTP request, for interceptors."""

    __slots__ = ("_origin", "_scope")

    def __init__(self, scope: Scope, origin: Origin) -> None:
        self._scope = scope
        self._origin = origin

    @property
    def url(self) -> str:
        """scheme://host/path as the client addressed it: what a DPoP proof's htu names.
        Built on demand: only key-bound tokens need it."""
        return self._origin.url(self._scope)


request_facts: ContextVar[RequestFacts] = ContextVar("request_facts")


@dataclass(frozen=True, slots=True)
class _Procedure:
    app: ASGIApp
    header_required: bool  # Connect-Protocol-Version
    get_allowed: bool  # no side effects: the Connect GET form is served


@dataclass(frozen=True, slots=True)
class _Leak:
    """Where a URL carried tokens (query parameter names, or "path"), and the tokens."""

    places: tuple[str, ...]
    tokens: tuple[str, ...]

    def refusal(self) -> ConnectError:
        advice = "a token must never be sent in the URL; it has been revoked, use the Authorization header"
        return to_connect_error(InvalidArgument([FieldViolation(place, advice) for place in self.places]))


class Edge:
    """The one ASGI application the server runs."""

    def __init__(
        self,
        *,
        max_body_bytes: int,
        body_read_timeout_seconds: float = 30,
        max_streams: int,
        lifespan: Callable[[str], Awaitable[None]] | None = None,
        origin: Origin | None = None,
    ) -> None:
        self._procedures: dict[str, _Procedure] = {}
        self._origin = origin or Origin()  # what DPoP proofs must name: see rpc/origin.py
        self._open = OpenStreams()
        self._streams: dict[str, ASGIApp] = {}
        self._max_body_bytes = max_body_bytes
        self._body_timeout = body_read_timeout_seconds
        self._max_streams = max_streams
        self._open_streams = 0
        self._revoke_leaked: RevokeLeaked | None = None
        self._observer: Observer | None = None
        self.lifespan = lifespan

    def mount(
        self,
        unary_procedures: Mapping[str, ASGIApp],
        streams: Mapping[str, ASGIApp] | None = None,
        *,
        protocol_header_required: bool = True,
        get_allowed: Collection[str] = frozenset(),
    ) -> None:
        """Route these procedures (at start-up, once the store is open). Unary
        calls are read whole first; streams are handed on as they come. The
        platform's procedures require Connect-Protocol-Version; health, which
        load balancers probe with whatever they send, does not. The paths in
        `get_allowed` (procedures declared without side effects) also take GET."""
        self._procedures.update(
            (path, _Procedure(app, protocol_header_required, path in get_allowed))
            for path, app in unary_procedures.items()
        )
        self._streams.update(streams or {})

    def end_streams(self) -> None:
        """At shutdown: end the open streaming calls with `unavailable`, and refuse new ones so."""
        self._open.end_all()

    def revoke_leaked_with(self, revoke: RevokeLeaked) -> None:
        """How tokens found in URLs are revoked (the store is open by then)."""
        self._revoke_leaked = revoke

    def observe_with(self, observer: Observer) -> None:
        """Time, count and log every HTTP request (zkplatform.observability)."""
        self._observer = observer

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._serve_lifespan(receive, send)
            return
        if scope["type"] != "http":
            return  # websockets: the server refuses the upgrade
        if self._observer is not None:
            await self._observer(scope, receive, send, self._route)
        else:
            await self._route(scope, receive, send)

    async def _route(self, scope: Scope, receive: Receive, send: Send) -> None:
        leak = _leak_in(scope)
        if leak is not None and leak.tokens and self._revoke_leaked is not None:
            await self._revoke_leaked(leak.tokens)
        path = scope["path"]
        if (procedure := self._procedures.get(path)) is not None:
            await self._unary(procedure, scope, receive, send, leak)
        elif (refusal := _malformed(scope) or (leak.refusal() if leak else None)) is not None:
            await send_error(send, scope, refusal)
        elif (stream := self._streams.get(path)) is not None:
            await self._stream(stream, scope, receive, send)
        elif path == "/healthz" and scope["method"] in ("GET", "HEAD"):
            await _send_plain(send, 200, b"ok\n")
        else:
            unknown = ConnectError(Code.UNIMPLEMENTED, f"unknown procedure {path}")
            await send_error(send, scope, unknown, http_status=404)  # the status Connect clients expect

    async def _unary(
        self, procedure: _Procedure, scope: Scope, receive: Receive, send: Send, leak: _Leak | None
    ) -> None:
        method = scope["method"]
        if method != "POST" and not (method == "GET" and procedure.get_allowed):
            allowed = "GET, POST" if procedure.get_allowed else "POST"
            refused = ConnectError(Code.UNIMPLEMENTED, f"{method} is not allowed: this procedure takes {allowed}")
            await send_error(send, scope, refused, http_status=405, headers=[(b"allow", allowed.encode())])
            return
        headers = _Headers(scope)
        if method == "GET":
            body, refusal = b"", self._query_over_limit(scope)
        else:
            body, refusal = await self._read_body(scope, receive, headers)
        if refusal is None:
            refusal = headers.malformed(scope)
        if refusal is None and procedure.header_required:
            refusal = _protocol_version_refusal(scope, headers)
        if refusal is None and leak is not None:
            refusal = leak.refusal()
        if refusal is not None:
            await send_error(send, scope, refusal)
            return
        request_facts.set(RequestFacts(scope, self._origin))
        await procedure.app(scope, _Replay(body, receive), send)

    def _query_over_limit(self, scope: Scope) -> ConnectError | None:
        """A GET carries its message in the query: the body limit holds for it too."""
        if len(scope.get("query_string", b"")) > self._max_body_bytes:
            return ConnectError(Code.RESOURCE_EXHAUSTED, f"request query exceeds {self._max_body_bytes} bytes")
        return None

    async def _read_body(self, scope: Scope, receive: Receive, headers: _Headers) -> tuple[bytes, ConnectError | None]:
        """The whole body, or why not: over the limit, or too slow to arrive.
        The call's deadline covers the reading; what is left of it is handed on."""
        deadline = headers.deadline_seconds()
        wait = self._body_timeout if deadline is None else min(deadline, self._body_timeout)
        loop = asyncio.get_running_loop()
        started = loop.time()
        try:
            body = await _read_limited(headers.content_length, _Patient(receive, started + wait), self._max_body_bytes)
        except TimeoutError:
            if deadline is not None and deadline <= self._body_timeout:
                return b"", ConnectError(Code.DEADLINE_EXCEEDED, "the deadline passed while the request was read")
            message = f"the request body did not arrive within {self._body_timeout:g} s"
            return b"", ConnectError(Code.DEADLINE_EXCEEDED, message)
        if body is None:
            return b"", ConnectError(Code.RESOURCE_EXHAUSTED, f"request body exceeds {self._max_body_bytes} bytes")
        if deadline is not None:
            _set_remaining_deadline(scope, deadline - (loop.time() - started))
        return body, None

    async def _stream(self, app: ASGIApp, scope: Scope, receive: Receive, send: Send) -> None:
        if self._open_streams >= self._max_streams:
            retry = error_details_pb2.RetryInfo(retry_delay=duration_pb2.Duration(seconds=1))
            message = f"too many open streaming calls (at most {self._max_streams}); retry later"
            await send_error(send, scope, ConnectError(Code.RESOURCE_EXHAUSTED, message, [error_detail(retry)]))
            return
        self._open_streams += 1
        request_facts.set(RequestFacts(scope, self._origin))  # the platform's streams authenticate too
        try:
            guard = _EnvelopeGuard(receive, self._max_body_bytes, self._body_timeout)
            await self._open.serve(app, scope, guard, send, client_gone=guard.client_gone)
        finally:
            self._open_streams -= 1

    async def _serve_lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            phase = message["type"].removeprefix("lifespan.")
            try:
                if self.lifespan is not None:
                    await self.lifespan(phase)
            except Exception as error:  # noqa: BLE001 # reported to the server, which refuses to start
                await send({"type": f"lifespan.{phase}.failed", "message": str(error)})
                return
            await send({"type": f"lifespan.{phase}.complete"})
            if phase == "shutdown":
                return


async def _read_limited(declared: str | None, receive: Receive, limit: int) -> bytes | None:
    """The whole body, or None when it is over the limit.

    A body over the limit is still read to its end, up to _DISCARD_LIMIT, and
    dropped: answered while its client is still sending, an HTTP/2 stream gets
    the rest of the body after it closed, which the server answers with a reset
    that a gRPC client may take for the answer. Nothing of it is kept.
    `declared`: the request's Content-Length."""
    if declared is not None and declared.isdigit() and int(declared) > limit:
        if int(declared) <= _DISCARD_LIMIT:
            await _discard(receive, _DISCARD_LIMIT)
        return None
    chunks: list[bytes] = []
    size = 0
    more = True
    while more:
        message = await receive()
        if message["type"] != "http.request":
            break  # disconnected: connectrpc sees the end of the body and answers canceled
        chunk = message.get("body", b"")
        size += len(chunk)
        more = message.get("more_body", False)
        if size > limit:
            if more:
                await _discard(receive, _DISCARD_LIMIT - size)
            return None
        chunks.append(chunk)
    return b"".join(chunks)


async def _discard(receive: Receive, budget: int) -> None:
    """Read the rest of a body and keep none of it, up to `budget` bytes."""
    while budget >= 0:
        message = await receive()
        if message["type"] != "http.request" or not message.get("more_body", False):
            return
        budget -= len(message.get("body", b""))


class _EnvelopeGuard:
    """The receive of a streaming call, watched message by message: a message
    declared over the limit is refused before it is buffered, and one that
    stalls half-way is given up after the timeout, so a stalled client holds
    neither memory nor a task for long. Between messages a stream may idle.

    Once the request has ended, only a disconnect can arrive: `client_gone`
    waits for it, since a server stream's handler would otherwise outlive its
    client (hypercorn does not cancel it on HTTP/2). connectrpc waits for that
    disconnect too, so the one message is read once and shown to both."""

    __slots__ = ("_after_end", "_ended", "_limit", "_prefix", "_receive", "_remaining", "_timeout")

    def __init__(self, receive: Receive, limit: int, timeout: float) -> None:
        self._receive = receive
        self._limit = limit
        self._timeout = timeout
        self._prefix = bytearray()
        self._remaining = 0
        self._ended = asyncio.Event()  # the request's body is complete
        self._after_end: asyncio.Future[Message] | None = None

    async def client_gone(self) -> None:
        """Return once the client has left (after its request ended)."""
        await self._ended.wait()
        try:
            await self._message_after_end()
        finally:
            if self._after_end is not None:
                self._after_end.cancel()  # the stream is over either way: nothing more to read

    async def _message_after_end(self) -> Message:
        if self._after_end is None:
            self._after_end = asyncio.ensure_future(self._receive())
        return await asyncio.shield(self._after_end)

    async def __call__(self) -> Message:
        if self._ended.is_set():
            return await self._message_after_end()
        if self._prefix or self._remaining:
            try:
                async with asyncio.timeout(self._timeout):
                    message = await self._receive()
            except TimeoutError:
                stalled = f"a request message did not arrive within {self._timeout:g} s"
                raise ConnectError(Code.DEADLINE_EXCEEDED, stalled) from None
        else:
            message = await self._receive()
        if message["type"] == "http.request":
            self._feed(message.get("body", b""))
            if not message.get("more_body", False):
                self._ended.set()
        return message

    def _feed(self, chunk: bytes) -> None:
        at = 0
        while at < len(chunk):
            if self._remaining:
                taken = min(self._remaining, len(chunk) - at)
                self._remaining -= taken
                at += taken
                continue
            taken = min(_ENVELOPE_PREFIX - len(self._prefix), len(chunk) - at)
            self._prefix += chunk[at : at + taken]
            at += taken
            if len(self._prefix) == _ENVELOPE_PREFIX:
                length = int.from_bytes(self._prefix[1:], "big")
                self._prefix.clear()
                if length > self._limit:
                    raise ConnectError(Code.RESOURCE_EXHAUSTED, f"request message exceeds {self._limit} bytes")
                self._remaining = length


def _leak_in(scope: Scope) -> _Leak | None:
    """Tokens in the URL: in the path, or in a query parameter's name or value,
    alone or inside a longer string; `access_token` is refused whatever it holds."""
    path: str = scope["path"]
    query: bytes = scope.get("query_string", b"")
    if not query and tokens.PREFIX not in path:
        return None  # the common case, at the cost of one substring search
    places: list[str] = []
    found: list[str] = []
    if in_path := tokens.find_in(path):
        places.append("path")
        found += in_path
    for name, value in parse_qsl(query.decode("latin-1"), keep_blank_values=True):
        in_name = tokens.find_in(name)
        if (in_param := in_name + tokens.find_in(value)) or name == "access_token":
            places.append("a query parameter's name" if in_name else name)  # never echo a token
            found += in_param
    return _Leak(tuple(dict.fromkeys(places)), tuple(dict.fromkeys(found))) if places else None


def _malformed(scope: Scope) -> ConnectError | None:
    """What connectrpc cannot answer cleanly itself (for calls that are not a known unary procedure)."""
    return _Headers(scope).malformed(scope)


def _is_utf8(raw: bytes) -> bool:
    try:
        raw.decode()
    except UnicodeDecodeError:
        return False
    return True


# Content types of Connect unary calls; gRPC and gRPC-Web (application/grpc...) carry no protocol header.
_CONNECT_UNARY_TYPES = (b"application/json", b"application/proto")


def _protocol_version_refusal(scope: Scope, headers: _Headers) -> ConnectError | None:
    """A Connect-protocol call without its protocol version: a POST of a Connect
    unary content type without the header, a GET without `connect=v1` in the
    query (the header stands for it there too). A wrong header value is
    connectrpc's to refuse."""
    if headers.protocol_version:
        return None
    if scope["method"] == "GET":
        versions = [v for k, v in parse_qsl(scope.get("query_string", b"").decode("latin-1")) if k == "connect"]
        if versions == ["v1"]:
            return None
        if versions:
            return ConnectError(Code.INVALID_ARGUMENT, "the query parameter connect must be v1 (once)")
        return ConnectError(
            Code.INVALID_ARGUMENT, "missing required query parameter connect=v1 (or header Connect-Protocol-Version: 1)"
        )
    if headers.last_content_type.lower().startswith(_CONNECT_UNARY_TYPES):
        return ConnectError(Code.INVALID_ARGUMENT, "missing required header Connect-Protocol-Version: 1")
    return None


_GRPC_TIMEOUT_UNITS = {"H": 3600.0, "M": 60.0, "S": 1.0, "m": 1e-3, "u": 1e-6, "n": 1e-9}


# The headers the edge acts on: each is read once, in one pass (they were a pass per check).
_READ: Final = frozenset(
    (b"content-type", b"content-length", b"connect-protocol-version", b"connect-timeout-ms", b"grpc-timeout")
)


class _Headers:
    """What the edge needs of a request's headers, from one pass over them: the first value
    of each header it reads (the last Content-Type too), and the first that is not UTF-8."""

    __slots__ = ("_first", "last_content_type", "not_utf8")

    def __init__(self, scope: Scope) -> None:
        first: dict[bytes, bytes] = {}
        self.last_content_type = b""
        self.not_utf8: str | None = None
        for key, value in scope.get("headers", ()):
            if key in _READ:
                if key not in first:
                    first[key] = value
                if key == b"content-type":
                    self.last_content_type = value
            if not (key.isascii() and value.isascii()) and self.not_utf8 is None and not _is_utf8(key + value):
                self.not_utf8 = key.decode("latin-1") if key.isascii() else "a request header"
        self._first = first

    def get(self, name: bytes) -> str | None:
        value = self._first.get(name)
        return None if value is None else value.decode("latin-1")

    @property
    def content_length(self) -> str | None:
        return self.get(b"content-length")

    @property
    def protocol_version(self) -> bool:
        return b"connect-protocol-version" in self._first

    def malformed(self, scope: Scope) -> ConnectError | None:
        """What connectrpc cannot answer cleanly itself: a header that is not UTF-8, gRPC over HTTP/1.1."""
        if self.not_utf8 is not None:
            return ConnectError(Code.INVALID_ARGUMENT, f"malformed request: {self.not_utf8} is not valid UTF-8")
        content_type = self.get(b"content-type") or ""
        grpc = content_type.startswith("application/grpc") and not content_type.startswith("application/grpc-web")
        if grpc and scope.get("http_version") != "2":
            advice = "gRPC needs HTTP/2; over HTTP/1.1 use the Connect protocol or gRPC-Web"
            return ConnectError(Code.UNIMPLEMENTED, advice)
        return None

    def deadline_seconds(self) -> float | None:
        """The call's own deadline: Connect-Timeout-Ms, or gRPC's grpc-timeout. A
        malformed value is left for connectrpc to refuse."""
        if (connect := self.get(b"connect-timeout-ms")) is not None:
            return int(connect) / 1000 if connect.isdigit() and len(connect) <= 10 else None
        grpc = self.get(b"grpc-timeout")
        if grpc and grpc[:-1].isdigit() and len(grpc) <= 9 and grpc[-1] in _GRPC_TIMEOUT_UNITS:
            return int(grpc[:-1]) * _GRPC_TIMEOUT_UNITS[grpc[-1]]
        return None


def _set_remaining_deadline(scope: Scope, remaining: float) -> None:
    """connectrpc starts the deadline when it gets the call: hand it what is left."""
    left_ms = max(1, int(remaining * 1000))
    headers = []
    for key, value in scope.get("headers", ()):
        if key == b"connect-timeout-ms":
            value = str(left_ms).encode()  # noqa: PLW2901
        elif key == b"grpc-timeout":
            value = f"{left_ms}m".encode()  # noqa: PLW2901
        headers.append((key, value))
    scope["headers"] = headers


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return str(value.decode("latin-1"))
    return None


class _Replay:
    """The receive connectrpc gets: the body the edge read, then the server's receive
    (after the body, only a disconnect can come)."""

    __slots__ = ("_body", "_receive")

    def __init__(self, body: bytes, receive: Receive) -> None:
        self._body: bytes | None = body
        self._receive = receive

    async def __call__(self) -> Message:
        if self._body is None:
            return await self._receive()
        body, self._body = self._body, None
        return {"type": "http.request", "body": body, "more_body": False}


class _Patient:
    """A receive that gives up with TimeoutError at `deadline` (the loop's clock).

    Usually the body is already in the server's queue when the call starts, and
    receive() returns without waiting: only a receive that must wait needs a timer.
    asyncio.timeout around every receive cost about 10 microseconds a call (bench/analysis.md),
    so a receive is first stepped once by hand; if it suspends, the rest of it is
    awaited under asyncio.timeout_at."""

    __slots__ = ("_deadline", "_receive")

    def __init__(self, receive: Receive, deadline: float) -> None:
        self._receive = receive
        self._deadline = deadline

    async def __call__(self) -> Message:
        receiving = self._receive()
        if not isinstance(receiving, types.CoroutineType):  # another kind of awaitable: no stepping by hand
            async with asyncio.timeout_at(self._deadline):
                return await receiving
        try:
            waiting_on = receiving.send(None)
        except StopIteration as done:
            message: Message = done.value
            return message
        async with asyncio.timeout_at(self._deadline):
            return await _resumed(receiving, waiting_on)


@types.coroutine
def _resumed(coroutine: Coroutine[Any, Any, Message], waiting_on: Any) -> Generator[Any, Any, Message]:
    """The rest of a coroutine already stepped once (that step yielded `waiting_on`):
    what `await` does, from its second step on."""
    try:
        while True:
            try:
                sent = yield waiting_on
            except GeneratorExit:
                coroutine.close()
                raise
            except BaseException as error:  # noqa: BLE001 # a cancellation (the timeout's) goes to the coroutine
                waiting_on = coroutine.throw(error)
            else:
                waiting_on = coroutine.send(sent)
    except StopIteration as done:
        result: Message = done.value
        return result


async def send_error(
    send: Send,
    scope: Scope,
    error: ConnectError,
    *,
    http_status: int | None = None,
    headers: Sequence[tuple[bytes, bytes]] = (),
) -> None:
    """Answer with a Connect error in the protocol of the request (Connect, gRPC, gRPC-Web)."""
    note_code(error.code)
    protocol = negotiate_server_protocol(_header(scope, b"content-type") or "")
    if isinstance(protocol, GRPCServerProtocol):
        status = [(k.encode(), v.encode()) for k, v in protocol.trailers_only_headers(None, error).allitems()]
        if protocol.uses_trailers() and "http.response.trailers" in scope.get("extensions", {}):
            # gRPC over HTTP/2: the status in real trailers. hypercorn cannot end a stream with its
            # headers (a trailers-only answer), and grpcio takes headers followed by an empty
            # DATA frame for a broken stream when it answers a call still sending its body.
            start = [(b"content-type", b"application/grpc")]
            await send({"type": "http.response.start", "status": 200, "headers": start, "trailers": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
            await send({"type": "http.response.trailers", "headers": status, "more_trailers": False})
            return
        await send({"type": "http.response.start", "status": 200, "headers": status})
        await send({"type": "http.response.body", "body": b""})
        return
    wire = ConnectWireError.from_exception(error)
    body = wire.to_json_bytes()
    await send(
        {
            "type": "http.response.start",
            "status": http_status or wire.to_http_status().code,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


async def _send_plain(send: Send, status: int, body: bytes) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})
