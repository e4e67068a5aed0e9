"""The watchers of bench/watches10k.py: one process holding thousands of WatchChanges streams.

    python -m bench.watchers     (a JSON spec on its first stdin line; answers on stdout, one JSON a line)

Run by the harness, one or more at a time, pinned away from the server. Every stream is read
(its heartbeats too) by one asyncio loop (uvloop) on bare sockets: HTTP/1.1 chunked Connect
streams (one connection each), or HTTP/2 (the h2 state machine, many streams on each
connection) speaking Connect or gRPC. What it costs a watch here is a socket, a buffer and a
callback, so that 10,000 of them leave the figures to the server.

Opening: in bursts of BURST at once (HTTP/1.1: BURST connects at once), each burst awaited to
its last first message. A connect or stream the server resets is counted and tried again in a
later burst (at most RETRIES times); one it refuses (an HTTP status, a Connect or gRPC error)
is counted by its code and not tried again. Then each line on stdin asks for the arrivals of
some sequences ({"collect": [...], "timeout": s}): when each open watch received each of them
(time.monotonic, one clock for every process of the machine), once all have or the timeout
passed.
"""

from __future__ import annotations

import asyncio
import json
import struct
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any, cast

import h2.config
import h2.connection
import h2.events
import uvloop

from zkplatform_api.platform.v1 import vault_pb2

SERVICE_PATH = "/platform.v1.VaultService/WatchChanges"
BURST = 200
RETRIES = 5
FIRST_MESSAGE_TIMEOUT_S = 120
END_STREAM = 0x02
PREFIX = 5
HTTP_OK = 200


@dataclass(frozen=True, slots=True)
class Spec:
    port: int
    token: str
    vault: str
    since: int
    count: int
    protocol: str  # "http1", "connect-h2" or "grpc-h2"
    streams_per_connection: int = 100  # hypercorn's most concurrent streams on one HTTP/2 connection


@dataclass
class Tally:
    opened: int = 0
    resets: int = 0  # connects or streams the server reset (tried again)
    refused: Counter[str] = field(default_factory=Counter)  # by code, not tried again
    ended: int = 0  # open watches that ended since
    arrivals: defaultdict[int, list[float]] = field(default_factory=lambda: defaultdict(list))


class Refused(Exception):  # an outcome, counted
    def __init__(self, code: str) -> None:
        super().__init__(code)
        self.code = code


class Reset(Exception):  # an outcome, counted
    pass


class Envelopes:
    """Connect or gRPC envelopes out of a stream's bytes: each change's arrival recorded, the
    first message announced."""

    def __init__(self, tally: Tally, first: asyncio.Future[None]) -> None:
        self._tally = tally
        self._buffer = b""
        self._ended = False
        self.first = first

    def feed(self, data: bytes) -> None:
        self._buffer += data
        at = time.monotonic()
        while len(self._buffer) >= PREFIX:
            flags, size = struct.unpack(">BI", self._buffer[:PREFIX])
            if len(self._buffer) < PREFIX + size:
                return
            body, self._buffer = self._buffer[PREFIX : PREFIX + size], self._buffer[PREFIX + size :]
            if flags & END_STREAM:
                self.end(_connect_code(body))
                return
            message = vault_pb2.WatchChangesResponse.FromString(body)
            for change in message.changes:
                self._tally.arrivals[change.sequence].append(at)
            if not self.first.done():
                self.first.set_result(None)

    def end(self, code: str) -> None:
        if self._ended:
            return
        self._ended = True
        if not self.first.done():
            self.first.set_exception(Refused(code) if code != "reset" else Reset())
        elif not self.first.exception():
            self._tally.ended += 1


def _connect_code(body: bytes) -> str:
    try:
        return str(json.loads(body).get("error", {}).get("code", "ended"))
    except ValueError:
        return "ended"


class Http1Watch(asyncio.Protocol):
    """One HTTP/1.1 connection carrying one Connect watch (chunked; chunk framing stripped here)."""

    def __init__(self, spec: Spec, tally: Tally) -> None:
        self._spec = spec
        self._head = b""
        self._chunked = b""
        self._in_body = False
        self.transport: asyncio.Transport | None = None
        self.envelopes = Envelopes(tally, asyncio.get_running_loop().create_future())

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast("asyncio.Transport", transport)  # a TCP connection's (uvloop's: no subclass)
        request = vault_pb2.WatchChangesRequest(vault_id=self._spec.vault, since_sequence=self._spec.since)
        body = struct.pack(">BI", 0, request.ByteSize()) + request.SerializeToString()
        head = (
            f"POST {SERVICE_PATH} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {len(body)}\r\n"
            "Content-Type: application/connect+proto\r\nConnect-Protocol-Version: 1\r\n"
            f"Authorization: Bearer {self._spec.token}\r\n\r\n"
        )
        self.transport.write(head.encode() + body)

    def data_received(self, data: bytes) -> None:
        if not self._in_body:
            self._head += data
            if b"\r\n\r\n" not in self._head:
                return
            head, data = self._head.split(b"\r\n\r\n", 1)
            status = int(head.split(b" ", 2)[1])
            if status != HTTP_OK:
                self.envelopes.end(f"http {status}")
                return
            self._in_body = True
        self._chunked += data
        while True:  # hypercorn sends each message as one chunk
            line_end = self._chunked.find(b"\r\n")
            if line_end < 0:
                return
            size = int(self._chunked[:line_end].split(b";")[0], 16)
            if size == 0:
                self.envelopes.end("ended")
                return
            if len(self._chunked) < line_end + 2 + size + 2:
                return
            self.envelopes.feed(self._chunked[line_end + 2 : line_end + 2 + size])
            self._chunked = self._chunked[line_end + 2 + size + 2 :]

    def connection_lost(self, exc: Exception | None) -> None:
        self.envelopes.end("reset" if not self._in_body else "ended")


class H2Connection(asyncio.Protocol):
    """One HTTP/2 connection (cleartext, prior knowledge) of many watches, Connect or gRPC; every
    stream is read, so its window and the connection's are given back as data arrives."""

    def __init__(self, spec: Spec, tally: Tally) -> None:
        self._spec = spec
        self._tally = tally
        self._h2 = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
        self._streams: dict[int, Envelopes] = {}
        self.transport: asyncio.Transport | None = None
        self.lost = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast("asyncio.Transport", transport)  # a TCP connection's (uvloop's: no subclass)
        self._h2.initiate_connection()
        self._flush()

    def watch(self) -> Envelopes:
        stream_id = self._h2.get_next_available_stream_id()
        envelopes = self._streams[stream_id] = Envelopes(self._tally, asyncio.get_running_loop().create_future())
        if self.lost:
            envelopes.end("reset")
            return envelopes
        grpc = self._spec.protocol == "grpc-h2"
        content_type = "application/grpc+proto" if grpc else "application/connect+proto"
        headers = [(":method", "POST"), (":scheme", "http"), (":authority", "127.0.0.1"), (":path", SERVICE_PATH)]
        headers += [("content-type", content_type), ("authorization", f"Bearer {self._spec.token}")]
        headers += [("te", "trailers")] if grpc else [("connect-protocol-version", "1")]
        request = vault_pb2.WatchChangesRequest(vault_id=self._spec.vault, since_sequence=self._spec.since)
        self._h2.send_headers(stream_id, headers)
        body = struct.pack(">BI", 0, request.ByteSize()) + request.SerializeToString()
        self._h2.send_data(stream_id, body, end_stream=True)
        self._flush()
        return envelopes

    def data_received(self, data: bytes) -> None:
        for event in self._h2.receive_data(data):
            stream = self._streams.get(getattr(event, "stream_id", 0) or 0)
            if stream is None:
                continue
            if isinstance(event, h2.events.DataReceived):
                stream.feed(event.data or b"")
                if event.flow_controlled_length:
                    self._h2.acknowledge_received_data(event.flow_controlled_length, event.stream_id or 0)
            elif isinstance(event, (h2.events.ResponseReceived, h2.events.TrailersReceived)):
                fields = {bytes(k): bytes(v) for k, v in event.headers or []}
                if fields.get(b":status", b"200") != b"200":
                    stream.end(f"http {fields[b':status'].decode()}")
                elif (status := fields.get(b"grpc-status", b"0")) != b"0":
                    stream.end(f"grpc {status.decode()}")
            elif isinstance(event, h2.events.StreamReset):
                stream.end("reset")
            elif isinstance(event, h2.events.StreamEnded):
                stream.end("ended")
        self._flush()

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        for stream in self._streams.values():
            stream.end("reset")

    def _flush(self) -> None:
        if self.transport is not None and (data := self._h2.data_to_send()):
            self.transport.write(data)


async def _open_http1(spec: Spec, tally: Tally, keep: list[object]) -> None:
    loop = asyncio.get_running_loop()

    async def one() -> bool:
        """True once open; False to try again (reset); raises Refused."""
        try:
            _, protocol = await loop.create_connection(lambda: Http1Watch(spec, tally), "127.0.0.1", spec.port)
        except OSError:
            return False
        try:
            await protocol.envelopes.first
        except Reset:
            return False
        keep.append(protocol)
        return True

    await _in_bursts(spec.count, one, tally)


async def _open_h2(spec: Spec, tally: Tally, keep: list[object]) -> None:
    loop = asyncio.get_running_loop()
    connections: list[H2Connection] = []
    for _ in range(-(-spec.count // spec.streams_per_connection)):
        _, connection = await loop.create_connection(lambda: H2Connection(spec, tally), "127.0.0.1", spec.port)
        connections.append(connection)
    keep.extend(connections)
    opened = Counter[int]()

    async def one() -> bool:
        index = min(range(len(connections)), key=lambda n: (connections[n].lost, opened[n]))
        opened[index] += 1
        try:
            await connections[index].watch().first
        except Reset:
            opened[index] -= 1
            return False
        return True

    await _in_bursts(spec.count, one, tally)


async def _in_bursts(count: int, one: Any, tally: Tally) -> None:  # () -> Awaitable[bool]
    tries = count * (RETRIES + 1)
    while tally.opened < count and tries > 0:
        burst = min(BURST, count - tally.opened, tries)
        tries -= burst
        async with asyncio.timeout(FIRST_MESSAGE_TIMEOUT_S):
            outcomes = await asyncio.gather(*(one() for _ in range(burst)), return_exceptions=True)
        for outcome in outcomes:
            if outcome is True:
                tally.opened += 1
            elif isinstance(outcome, Refused):
                tally.refused[outcome.code] += 1
                tries = min(tries, count - tally.opened - 1)
            elif outcome is False:
                tally.resets += 1
            elif isinstance(outcome, BaseException):
                raise outcome


async def _collect(tally: Tally, sequences: list[int], timeout_s: float) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        alive = tally.opened - tally.ended
        if all(len(tally.arrivals.get(seq, ())) >= alive for seq in sequences):
            break
        await asyncio.sleep(0.05)
    arrivals = {str(seq): tally.arrivals.get(seq, []) for seq in sequences}
    return {"arrivals": arrivals, "ended": tally.ended}


async def main() -> None:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    spec = Spec(**json.loads(await reader.readline()))
    tally, keep = Tally(), list[object]()
    started = time.monotonic()
    await (_open_http1 if spec.protocol == "http1" else _open_h2)(spec, tally, keep)
    opened = {"opened": tally.opened, "resets": tally.resets, "refused": dict(tally.refused)}
    print(json.dumps(opened | {"open_s": time.monotonic() - started}), flush=True)
    while line := await reader.readline():
        ask = json.loads(line)
        print(json.dumps(await _collect(tally, ask["collect"], ask["timeout"])), flush=True)
    for held in keep:
        transport = getattr(held, "transport", None)
        if transport is not None:
            transport.close()


if __name__ == "__main__":
    uvloop.run(main())
