"""Connect clients of the watch figures, binary codec: bare HTTP/1.1 on asyncio streams, one
connection per call (as a browser's watch through a proxy has), and HTTP/2 through httpx,
many watches on each connection (as gRPC clients have), or through the h2 state machine where
a client must stall some streams of a connection and read the others (RawH2).

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

import h2.config
import h2.connection
import h2.errors
import h2.events
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


def _headers(token: str, content_type: str, request_id: str = "") -> dict[str, str]:
    """The call's headers; with `request_id`, its access line can be told apart in the server's log."""
    headers = {"Content-Type": content_type, "Connect-Protocol-Version": "1", "Authorization": f"Bearer {token}"}
    return headers | ({"X-Request-Id": request_id} if request_id else {})


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

    def stop_reading(self) -> None:
        """Read nothing more from the socket: what the server sends waits in the kernel's buffers."""
        transport = self._writer.transport
        if isinstance(transport, asyncio.ReadTransport):  # a socket's: always
            transport.pause_reading()

    async def unary(self, method: str, token: str, request: Message) -> bytes:
        """Call `method`; the answer's body."""
        sized = await self._post(method, token, "application/proto", request.SerializeToString())
        if sized is not None:
            return sized
        return b"".join([chunk async for chunk in self._chunks()])

    async def watch(self, token: str, vault_id: str, since: int, request_id: str = "") -> Messages:
        """Open WatchChanges on this connection."""
        body = _watch_body(vault_id, since)
        if await self._post("WatchChanges", token, WATCH_TYPE, body, request_id) is not None:
            msg = "WatchChanges answered a sized body: it ended at once"
            raise RuntimeError(msg)
        return Messages(self._chunks())

    async def _post(
        self, method: str, token: str, content_type: str, body: bytes, request_id: str = ""
    ) -> bytes | None:
        """Send the call, read the answer's head; its body when sized (None when chunked)."""
        head = f"POST {SERVICE}{method} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {len(body)}\r\n"
        head += "".join(f"{name}: {value}\r\n" for name, value in _headers(token, content_type, request_id).items())
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


class RawH2:
    """One HTTP/2 connection, cleartext (prior knowledge), of WatchChanges streams that are
    either read or stalled, as a gRPC client's are: its transport reads every frame and gives
    the connection's window back as data arrives, while a stream's own window comes back only
    as its application reads. A read stream's data is acknowledged at once, so its window
    refills; a stalled stream's never is: once the server has used its window (65,535 bytes),
    it can send that stream nothing more. The connection's window updates that the read
    streams bring go on meanwhile (they used to let a stalled stream buffer one more message
    each, src/zkplatform/server/hypercorn_fix.py). A reset from the server shows in `stalled_resets`."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer
        self._h2 = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
        self._streams: dict[int, _H2Stream] = {}
        self._receiving: asyncio.Task[None] | None = None

    @classmethod
    async def open(cls, port: int) -> RawH2:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        connection = cls(reader, writer)
        connection._h2.initiate_connection()
        connection._flush()
        connection._receiving = asyncio.create_task(connection._receive())
        return connection

    def close(self) -> None:
        if self._receiving is not None:
            self._receiving.cancel()
        self._writer.close()

    def cancel_stalled(self) -> None:
        """Reset every stalled stream still open (CANCEL), as a client cancelling its call does."""
        for stream_id, stream in self._streams.items():
            if not stream.read and stream.open:
                self._h2.reset_stream(stream_id, h2.errors.ErrorCodes.CANCEL)
                stream.end()
        self._flush()

    def stalled_resets(self) -> int:
        """The stalled streams the server reset."""
        return sum(not stream.read and stream.reset is not None for stream in self._streams.values())

    async def watch(self, token: str, vault_id: str, since: int, request_id: str, *, read: bool) -> Messages:
        """Open WatchChanges on this connection, read or stalled; its messages (a stalled one's
        only as far as its window let the server send)."""
        if self._receiving is None or self._receiving.done():
            msg = "the HTTP/2 connection has closed"
            raise RuntimeError(msg)
        stream_id = self._h2.get_next_available_stream_id()
        stream = self._streams[stream_id] = _H2Stream(read=read)
        headers = {":method": "POST", ":scheme": "http", ":authority": "127.0.0.1", ":path": SERVICE + "WatchChanges"}
        headers |= {name.lower(): value for name, value in _headers(token, WATCH_TYPE, request_id).items()}
        self._h2.send_headers(stream_id, list(headers.items()))
        self._h2.send_data(stream_id, _watch_body(vault_id, since), end_stream=True)
        self._flush()
        status = await stream.status
        if status != str(HTTP_OK):
            msg = f"WatchChanges answered {status} over HTTP/2"
            raise RuntimeError(msg)
        return Messages(stream.chunks())

    async def _receive(self) -> None:
        try:
            while data := await self._reader.read(65536):
                for event in self._h2.receive_data(data):
                    self._handle(event)
                self._flush()
        finally:
            for stream in self._streams.values():
                stream.end()

    def _handle(self, event: h2.events.Event) -> None:
        stream = self._streams.get(getattr(event, "stream_id", 0) or 0)
        if stream is None:
            return  # the connection's own: settings, pings (h2 answers them), window updates
        if isinstance(event, h2.events.ResponseReceived):
            status = dict(event.headers or [])[b":status"]
            if not stream.status.done():
                stream.status.set_result(status.decode())
        elif isinstance(event, h2.events.DataReceived):
            stream.received.put_nowait(event.data or b"")
            length = event.flow_controlled_length or 0
            if length and stream.read:  # the stream's window and the connection's
                self._h2.acknowledge_received_data(length, event.stream_id or 0)
            elif length:  # the connection's only
                self._h2.increment_flow_control_window(length)
        elif isinstance(event, h2.events.StreamReset):
            stream.reset = event.error_code
            stream.end()
        elif isinstance(event, h2.events.StreamEnded):
            stream.end()

    def _flush(self) -> None:
        if data := self._h2.data_to_send():
            self._writer.write(data)


class _H2Stream:
    def __init__(self, *, read: bool) -> None:
        self.read = read
        self.status: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self.received: asyncio.Queue[bytes | None] = asyncio.Queue()  # None: the stream ended
        self.reset: int | None = None
        self.open = True

    def end(self) -> None:
        self.open = False
        if not self.status.done():
            self.status.set_result("none (the stream ended before its answer)")
        self.received.put_nowait(None)

    async def chunks(self) -> AsyncIterator[bytes]:
        while (chunk := await self.received.get()) is not None:
            yield chunk
