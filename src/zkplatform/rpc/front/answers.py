"""Answers the front writes itself, for requests it refuses before connectrpc sees them.

An error is written in the request's own protocol (Connect, gRPC, gRPC-Web),
exactly as connectrpc writes its own (rpc/internals.py says why that takes
connectrpc's private renderer).
"""

from __future__ import annotations

from collections.abc import Sequence

from connectrpc.errors import ConnectError

from zkplatform.asgi import Scope, Send
from zkplatform.observability.calls import note_code
from zkplatform.rpc.internals import ConnectWireError, GRPCServerProtocol, negotiate_server_protocol


def content_type_of(scope: Scope) -> str:
    return next((value.decode("latin-1") for key, value in scope["headers"] if key == b"content-type"), "")


async def send_error(
    send: Send,
    scope: Scope,
    error: ConnectError,
    *,
    http_status: int | None = None,
    headers: Sequence[tuple[bytes, bytes]] = (),
) -> None:
    """Answer with a Connect error in the protocol of the request."""
    note_code(error.code)
    protocol = negotiate_server_protocol(content_type_of(scope))
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
    start_headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *headers]
    await send(
        {"type": "http.response.start", "status": http_status or wire.to_http_status().code, "headers": start_headers}
    )
    await send({"type": "http.response.body", "body": body})


async def send_plain(send: Send, status: int, body: bytes) -> None:
    headers = [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
