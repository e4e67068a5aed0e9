"""A TLS port that tells a plaintext HTTP client what is wrong instead of hanging up on it.

asyncio's TLS server takes whatever a connection sends first as a TLS handshake; an
`http://` request fails it and the client sees its connection closed with no answer
("empty reply from server"). As nginx does, this server looks at a connection's first
byte before the handshake: a TLS connection begins with a record type byte (a
handshake, 0x16), an HTTP/1.x request or an HTTP/2 preface with an ASCII letter. A
letter is answered with an HTTP/1.1 400 holding a Connect error (`invalid_argument`,
`TLS_REQUIRED`) and the connection closed; anything else goes on to the handshake,
which hypercorn's connection handler then serves as it always did.

hypercorn starts its TLS server with `asyncio.start_server(..., ssl=...)`; `apply()`
hands hypercorn's run module a start_server that, for a TLS socket, accepts itself and
starts TLS on each accepted socket with `loop.connect_accepted_socket`: asyncio's own
TLS, after a peek (MSG_PEEK) that leaves the bytes for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import ssl
import types
from collections.abc import Awaitable, Callable
from typing import Any, Final

import hypercorn.asyncio.run
from connectrpc.code import Code

from zkplatform.rpc.errors import refusal
from zkplatform.rpc.internals import ConnectWireError
from zkplatform_api.platform.v1.errors_pb2 import ErrorReason

log = logging.getLogger(__name__)

ClientConnected = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]

STREAM_LIMIT: Final = 2**16  # asyncio.start_server's default reader limit
ACCEPT_RETRY_SECONDS: Final = 1.0  # as asyncio's own server, when accept fails (out of descriptors)
DRAIN_SECONDS: Final = 1.0  # how long the refused client's request is read, so that closing sends no reset
DRAIN_BYTES: Final = 64 * 1024


def plaintext_answer() -> bytes:
    """The whole HTTP/1.1 answer to a plaintext request."""
    error = refusal(
        Code.INVALID_ARGUMENT,
        ErrorReason.TLS_REQUIRED,
        "this port serves TLS only: send the request to the https:// address",
    )
    body = ConnectWireError.from_exception(error).to_json_bytes()
    head = (
        "HTTP/1.1 400 Bad Request\r\n"
        "Content-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n"
        "Connection: close\r\n\r\n"
    )
    return head.encode() + body


def _is_plaintext_http(first: bytes) -> bool:
    return first.isalpha() and first.isascii()


class TlsListener:
    """What asyncio.start_server answers, for one listening TLS socket: accepts until closed."""

    def __init__(
        self, callback: ClientConnected, sock: socket.socket, context: ssl.SSLContext, handshake_timeout: float
    ) -> None:
        self._callback = callback
        self._sock = sock
        self._context = context
        self._handshake_timeout = handshake_timeout
        self._answer = plaintext_answer()
        self._openings: set[asyncio.Task[None]] = set()
        sock.setblocking(False)
        self._accepting = asyncio.get_running_loop().create_task(self._accept())

    def close(self) -> None:
        """Stop accepting; connections not yet handed over are dropped (those served go on)."""
        self._accepting.cancel()
        for opening in self._openings:
            opening.cancel()

    async def wait_closed(self) -> None:
        await asyncio.gather(self._accepting, *self._openings, return_exceptions=True)
        self._sock.close()

    async def _accept(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            try:
                connection, _ = await loop.sock_accept(self._sock)
            except OSError as error:  # out of descriptors, say: as asyncio's server, wait and go on
                log.warning("accepting a connection failed (%s); trying again in %g s", error, ACCEPT_RETRY_SECONDS)
                await asyncio.sleep(ACCEPT_RETRY_SECONDS)
                continue
            opening = loop.create_task(self._open(connection))
            self._openings.add(opening)
            opening.add_done_callback(self._openings.discard)

    async def _open(self, connection: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        handed_over = False
        try:
            async with asyncio.timeout(self._handshake_timeout):
                first = await _peek(loop, connection)
            if not first:
                return
            if _is_plaintext_http(first):
                await self._refuse(loop, connection)
                return
            reader = asyncio.StreamReader(limit=STREAM_LIMIT, loop=loop)
            protocol = asyncio.StreamReaderProtocol(reader, self._callback, loop=loop)
            await loop.connect_accepted_socket(
                lambda: protocol, connection, ssl=self._context, ssl_handshake_timeout=self._handshake_timeout
            )
            handed_over = True
        except (OSError, TimeoutError) as error:  # ssl.SSLError is an OSError: a failed handshake
            log.debug("a connection closed before it was served: %s", error)
        finally:
            if not handed_over:
                connection.close()

    async def _refuse(self, loop: asyncio.AbstractEventLoop, connection: socket.socket) -> None:
        # The request is read (and dropped) while the answer goes out, so that closing with it
        # unread does not reset the connection under the answer.
        await loop.sock_sendall(connection, self._answer)
        connection.shutdown(socket.SHUT_WR)
        with contextlib.suppress(TimeoutError, OSError):
            async with asyncio.timeout(DRAIN_SECONDS):
                drained = 0
                while drained < DRAIN_BYTES and (data := await loop.sock_recv(connection, 4096)):
                    drained += len(data)


async def _peek(loop: asyncio.AbstractEventLoop, connection: socket.socket) -> bytes:
    """The connection's first byte, left in place for the TLS handshake; b"" if it closed first."""
    readable: asyncio.Future[None] = loop.create_future()

    def wake() -> None:
        if not readable.done():
            readable.set_result(None)

    loop.add_reader(connection.fileno(), wake)
    try:
        await readable
    finally:
        loop.remove_reader(connection.fileno())
    return connection.recv(1, socket.MSG_PEEK)


async def _start_server(client_connected_cb: ClientConnected, **kwargs: Any) -> Any:
    context = kwargs.get("ssl")
    if context is None:
        return await asyncio.start_server(client_connected_cb, **kwargs)
    return TlsListener(client_connected_cb, kwargs["sock"], context, kwargs["ssl_handshake_timeout"])


def apply() -> None:
    """Have hypercorn's asyncio worker serve its TLS sockets with TlsListener (idempotent)."""
    run_module = vars(hypercorn.asyncio.run)
    if isinstance(run_module["asyncio"], types.SimpleNamespace):
        return
    # hypercorn's run module calls asyncio.start_server through its module global `asyncio`:
    # that global, for that module only, becomes asyncio with another start_server.
    patched = types.SimpleNamespace(**vars(asyncio))
    patched.start_server = _start_server
    run_module["asyncio"] = patched
