"""Connect clients of the watch figures, binary codec: bare HTTP/1.1 on asyncio streams, one
connection per call (as a browser's watch through a proxy has), and HTTP/2 through httpx,
many watches on each connection (as gRPC clients have).

Bare streams for HTTP/1.1 rather than an HTTP library: a thousand idle watches cost this
process nothing but their sockets, and a change reaches the figures as soon as its bytes
arrive, so what the figures measure is the server. Streaming answers come chunked
(hypercorn's HTTP/1.1); each Connect message is a 5-byte envelope (flags, big-endian
length) and its protobuf, the last one flagged end-of-stream with JSON.
"""

from __future__ import annotations

import asyncio
import struct
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack

import httpx
from google.protobuf.message import Message

from zkplatform_api.platform.v1 import vault_pb2

SERVICE = "/platform.v1.VaultService/"
WATCH_TYPE = "application/connect+proto"
END_STREAM = 0x02
PREFIX = 5  # an envelope's flags and length
HTTP_OK = 200


class Messages:
    """The WatchChanges messages in the chunks of a Connect streaming body."""

    def __init__(self, chunks: AsyncIterator[bytes]) -> None:
        self._chunks = chunks
        self._buffer = b""

    async def next(self) -> vault_pb2.WatchChangesResponse:
        """The next message; raises when the stream ends (it should not, here)."""
        while True:
            if len(self._buffer) >= PREFIX:
                flags, size = struct.unpack(">BI", self._buffer[:PREFIX])
                if len(self._buffer) >= PREFIX + size:
                    body, self._buffer = self._buffer[PREFIX : PREFIX + size], self._buffer[PREFIX + size :]
                    if flags & END_STREAM:
                        msg = f"the watch ended: {body[:300]!r}"
                        raise RuntimeError(msg)
                    return vault_pb2.WatchChangesResponse.FromString(body)
            chunk = await anext(self._chunks, None)
            if chunk is None:
                msg = "the watch ended without its end message"
                raise RuntimeError(msg)
            self._buffer += chunk


def _watch_body(vault_id: str, since: int) -> bytes:
    request = vault_pb2.WatchChangesRequest(vault_id=vault_id, since_sequence=since).SerializeToString()
    return struct.pack(">BI", 0, len(request)) + request


def _headers(token: str, content_type: str) -> dict[str, str]:
    return {"Content-Type": content_type, "Connect-Protocol-Version": "1", "Authorization": f"Bearer {token}"}


class Connection:
    """HTTP/1.1: unary calls one after the other (keep-alive), or one watch."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer

    @classmethod
    async def open(cls, port: int) -> Connection:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        return cls(reader, writer)

    def close(self) -> None:
        self._writer.close()

    async def unary(self, method: str, token: str, request: Message) -> bytes:
        """Call `method`; the answer's body."""
        sized = await self._post(method, token, "application/proto", request.SerializeToString())
        if sized is not None:
            return sized
        return b"".join([chunk async for chunk in self._chunks()])

    async def watch(self, token: str, vault_id: str, since: int) -> Messages:
        """Open WatchChanges on this connection."""
        if await self._post("WatchChanges", token, WATCH_TYPE, _watch_body(vault_id, since)) is not None:
            msg = "WatchChanges answered a sized body: it ended at once"
            raise RuntimeError(msg)
        return Messages(self._chunks())

    async def _post(self, method: str, token: str, content_type: str, body: bytes) -> bytes | None:
        """Send the call, read the answer's head; its body when sized (None when chunked)."""
        head = f"POST {SERVICE}{method} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {len(body)}\r\n"
        head += "".join(f"{name}: {value}\r\n" for name, value in _headers(token, content_type).items())
        self._writer.write(head.encode() + b"\r\n" + body)
        status_line, *lines = (await self._reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
        fields = dict(line.lower().split(": ", 1) for line in lines if ": " in line)
        chunked = fields.get("transfer-encoding") == "chunked"
        sized = None if chunked else await self._reader.readexactly(int(fields.get("content-length", "0")))
        if int(status_line.split()[1]) != HTTP_OK:
            msg = f"{method} answered {status_line!r}: {(sized or b'')[:300]!r}"
            raise RuntimeError(msg)
        return sized

    async def _chunks(self) -> AsyncIterator[bytes]:
        """The chunks of a chunked body, to its last."""
        while size := int((await self._reader.readuntil(b"\r\n")).split(b";")[0], 16):
            yield (await self._reader.readexactly(size + 2))[:-2]  # and its CRLF
        await self._reader.readexactly(2)  # the end of the body (no trailers)


async def h2_watch(stack: AsyncExitStack, client: httpx.AsyncClient, token: str, vault_id: str, since: int) -> Messages:
    """HTTP/2: open WatchChanges on `client`'s connection; it ends with `stack`."""
    answer = await stack.enter_async_context(
        client.stream(
            "POST", SERVICE + "WatchChanges", content=_watch_body(vault_id, since), headers=_headers(token, WATCH_TYPE)
        )
    )
    if answer.status_code != HTTP_OK or answer.http_version != "HTTP/2":
        msg = f"WatchChanges answered {answer.status_code} over {answer.http_version}"
        raise RuntimeError(msg)
    return Messages(answer.aiter_raw())


def h2_client(port: int) -> httpx.AsyncClient:
    """One HTTP/2 connection, cleartext (prior knowledge), for many watches."""
    return httpx.AsyncClient(
        base_url=f"http://127.0.0.1:{port}", http1=False, http2=True, timeout=60
    )  # heartbeats come every 15 s
