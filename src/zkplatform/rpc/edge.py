"""The HTTP edge: what happens before a request reaches connectrpc.

- routes each procedure path to its service's Connect application, and answers
  unknown paths 404 `unimplemented` and `GET /healthz` with 200;
- buffers a unary call's body, refusing one over the size limit before anything
  else is looked at (the contract's first check). Reading the whole body first
  also sidesteps hypercorn 0.18 dropping an HTTP/2 connection when a call is
  refused before its body was read (hypercorn issue 329);
- then requires `Connect-Protocol-Version` on Connect-protocol calls (the
  contract's second check): connectrpc refuses a wrong value but accepts a
  missing header. gRPC and gRPC-Web calls do not use the header;
- records the request's query string and URL for the checks that need them (a
  token in the URL, a DPoP proof's htu), which connectrpc's request context
  does not carry.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from contextvars import ContextVar
from typing import Any

from connectrpc.code import Code
from connectrpc.errors import ConnectError

from zkplatform.rpc.internals import ConnectWireError, GRPCServerProtocol, negotiate_server_protocol

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


class RequestFacts:
    """What the edge saw of the HTTP request, for interceptors."""

    __slots__ = ("_scope",)

    def __init__(self, scope: Scope) -> None:
        self._scope = scope

    @property
    def query_string(self) -> bytes:
        query: bytes = self._scope.get("query_string", b"")
        return query

    @property
    def url(self) -> str:
        """scheme://host/path as the client addressed it: what a DPoP proof's htu names.
        Built on demand: only key-bound tokens need it."""
        return _url(self._scope)


request_facts: ContextVar[RequestFacts] = ContextVar("request_facts")


class Edge:
    """The one ASGI application the server runs."""

    def __init__(self, *, max_body_bytes: int, lifespan: Callable[[str], Awaitable[None]] | None = None) -> None:
        self._procedures: dict[str, tuple[ASGIApp, bool]] = {}
        self._streams: dict[str, ASGIApp] = {}
        self._max_body_bytes = max_body_bytes
        self.lifespan = lifespan

    def mount(
        self,
        unary_procedures: Mapping[str, ASGIApp],
        streams: Mapping[str, ASGIApp] | None = None,
        *,
        protocol_header_required: bool = True,
    ) -> None:
        """Route these procedures (at start-up, once the store is open). Unary
        calls are read whole first; streams are handed on as they come. The
        platform's procedures require Connect-Protocol-Version; health, which
        load balancers probe with whatever they send, does not."""
        self._procedures.update((path, (app, protocol_header_required)) for path, app in unary_procedures.items())
        self._streams.update(streams or {})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._serve_lifespan(receive, send)
        elif scope["type"] == "http":
            path = scope["path"]
            if (stream := self._streams.get(path)) is not None:
                await stream(scope, receive, send)
            elif (procedure := self._procedures.get(path)) is not None:
                await self._unary(*procedure, scope, receive, send)
            elif path == "/healthz" and scope["method"] in ("GET", "HEAD"):
                await _send_plain(send, 200, b"ok\n")
            else:
                unknown = ConnectError(Code.UNIMPLEMENTED, f"unknown procedure {path}")
                await send_error(send, scope, unknown, http_status=404)  # the status Connect clients expect

    async def _unary(self, app: ASGIApp, header_required: bool, scope: Scope, receive: Receive, send: Send) -> None:
        request_facts.set(RequestFacts(scope))
        if scope["method"] == "POST":
            body = await self._read_body(scope, receive)
            if body is None:
                limit = self._max_body_bytes
                error = ConnectError(Code.RESOURCE_EXHAUSTED, f"request body exceeds {limit} bytes")
                await send_error(send, scope, error)
                return
            receive = _replay(body, receive)
        if header_required and _lacks_protocol_version(scope):
            error = ConnectError(Code.INVALID_ARGUMENT, "missing required header Connect-Protocol-Version: 1")
            await send_error(send, scope, error)
            return
        await app(scope, receive, send)

    async def _read_body(self, scope: Scope, receive: Receive) -> bytes | None:
        """The whole body, or None when it is over the limit."""
        limit = self._max_body_bytes
        declared = _header(scope, b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
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
            if size > limit:
                return None
            chunks.append(chunk)
            more = message.get("more_body", False)
        return b"".join(chunks)

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


# Content types of Connect unary calls; gRPC and gRPC-Web (application/grpc...) carry no protocol header.
_CONNECT_UNARY_TYPES = (b"application/json", b"application/proto")


def _lacks_protocol_version(scope: Scope) -> bool:
    """A Connect-protocol call (a GET, or a POST of a Connect unary content type) without the header."""
    content_type = b""
    for key, value in scope.get("headers", ()):
        if key == b"connect-protocol-version":
            return False
        if key == b"content-type":
            content_type = value
    return scope["method"] == "GET" or content_type.lower().startswith(_CONNECT_UNARY_TYPES)


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return str(value.decode("latin-1"))
    return None


def _url(scope: Scope) -> str:
    host = _header(scope, b"host")
    if host is None:
        server = scope.get("server") or ("localhost", None)
        host = server[0] if server[1] is None else f"{server[0]}:{server[1]}"
    return f"{scope.get('scheme', 'http')}://{host}{scope['path']}"


def _replay(body: bytes, receive: Receive) -> Receive:
    delivered = False

    async def replay() -> Message:
        nonlocal delivered
        if delivered:
            return await receive()  # after the body: only a disconnect can come
        delivered = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replay


async def send_error(send: Send, scope: Scope, error: ConnectError, *, http_status: int | None = None) -> None:
    """Answer with a Connect error in the protocol of the request (Connect, gRPC, gRPC-Web)."""
    protocol = negotiate_server_protocol(_header(scope, b"content-type") or "")
    if isinstance(protocol, GRPCServerProtocol):
        headers = protocol.trailers_only_headers(None, error)
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(k.encode(), v.encode()) for k, v in headers.allitems()],
            }
        )
        await send({"type": "http.response.body", "body": b""})
        return
    wire = ConnectWireError.from_exception(error)
    body = wire.to_json_bytes()
    await send(
        {
            "type": "http.response.start",
            "status": http_status or wire.to_http_status().code,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
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
