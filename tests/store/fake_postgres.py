"""A stand-in for a PostgreSQL server in a state a test cannot put a real one in.

It refuses each of the first connections at startup with a FATAL error, as a
server that is starting up or that rejects the credentials does, and passes
the later ones through to a real server. It counts the connections it takes,
so that a test observes retries instead of timing them.
"""

from __future__ import annotations

import asyncio
import contextlib
import struct
from collections.abc import AsyncIterator
from urllib.parse import urlsplit, urlunsplit


class FakePostgres:
    def __init__(self, real_url: str, refusals: list[tuple[str, str]]) -> None:
        self._real = urlsplit(real_url)
        self._refusals = list(refusals)  # (SQLSTATE, message), one per connection, in order
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self.connections = 0
        self.url = ""

    @classmethod
    @contextlib.asynccontextmanager
    async def running(cls, real_url: str, refusals: list[tuple[str, str]]) -> AsyncIterator[FakePostgres]:
        fake = cls(real_url, refusals)
        fake._server = await asyncio.start_server(fake._serve, "127.0.0.1", 0)
        port = fake._server.sockets[0].getsockname()[1]
        # Plain startup packets: no SSL or GSS negotiation to imitate.
        fake.url = urlunsplit(
            fake._real._replace(
                netloc=f"{fake._real.username}@127.0.0.1:{port}", query="sslmode=disable&gssencmode=disable"
            )
        )
        try:
            yield fake
        finally:
            fake._server.close()
            # Not cancelled: the clients have closed their ends, so every connection ends by itself
            # (and asyncio logs an error for a cancelled connection handler).
            await asyncio.gather(*fake._tasks)
            await fake._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            if self._refusals:
                await self._refuse(reader, writer, *self._refusals.pop(0))
            else:
                await self._pass_through(reader, writer)
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()
            self._tasks.discard(task)

    async def _refuse(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, code: str, message: str
    ) -> None:
        (length,) = struct.unpack("!i", await reader.readexactly(4))
        await reader.readexactly(length - 4)  # the startup packet: user, database
        fields = b"".join(
            tag + value.encode() + b"\0"
            for tag, value in ((b"S", "FATAL"), (b"V", "FATAL"), (b"C", code), (b"M", message))
        )
        body = fields + b"\0"
        writer.write(b"E" + struct.pack("!i", 4 + len(body)) + body)
        await writer.drain()

    async def _pass_through(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        real_reader, real_writer = await asyncio.open_connection(self._real.hostname, self._real.port or 5432)
        try:
            await asyncio.gather(_pump(reader, real_writer), _pump(real_reader, writer))
        finally:
            real_writer.close()
            with contextlib.suppress(ConnectionError):
                await real_writer.wait_closed()


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(ConnectionError):
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    if not writer.is_closing() and writer.can_write_eof():
        with contextlib.suppress(OSError):
            writer.write_eof()
