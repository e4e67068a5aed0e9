"""A WatchChanges reader for end-to-end tests: Connect streaming (JSON or binary) and
gRPC-Web over httpx, each message read as it arrives, with a bounded wait."""

from __future__ import annotations

import json
import struct
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx
from google.protobuf import json_format

from zkplatform_api.platform.v1 import vault_pb2

WATCH = "/platform.v1.VaultService/WatchChanges"
END_STREAM = 0x02  # Connect's end-of-stream message
TRAILERS = 0x80  # gRPC-Web's trailers frame


@dataclass
class Ended:
    """How the stream ended: a Connect or gRPC code ("" or "ok" when it did not fail), and the message."""

    code: str
    message: str


class Watch:
    def __init__(self, response: httpx.Response, protocol: str) -> None:
        self.response = response
        self._protocol = protocol
        self._chunks = response.aiter_raw()
        self._buffer = b""

    async def _read(self, size: int) -> bytes | None:
        while len(self._buffer) < size:
            try:
                self._buffer += await anext(self._chunks)
            except StopAsyncIteration:
                return None
        data, self._buffer = self._buffer[:size], self._buffer[size:]
        return data

    async def next(self) -> vault_pb2.WatchChangesResponse | Ended:
        """The next message, or how the stream ended. The caller bounds the wait."""
        prefix = await self._read(5)
        if prefix is None:
            return Ended("", "the stream ended without its end message")
        flags, size = struct.unpack(">BI", prefix)
        body = await self._read(size) or b""
        if self._protocol == "grpc-web" and flags & TRAILERS:
            trailers = dict(line.split(":", 1) for line in body.decode().strip().split("\r\n") if ":" in line)
            code = trailers.get("grpc-status", "").strip()
            return Ended(code, trailers.get("grpc-message", "").strip())
        if flags & END_STREAM:
            error: dict[str, Any] = json.loads(body or b"{}").get("error", {})
            return Ended(error.get("code", ""), error.get("message", ""))
        message = vault_pb2.WatchChangesResponse()
        if self._protocol == "connect-json":
            json_format.Parse(body, message)
        else:
            message.ParseFromString(body)
        return message


def _content_type(protocol: str) -> str:
    return {
        "connect-json": "application/connect+json",
        "connect-proto": "application/connect+proto",
        "grpc-web": "application/grpc-web+proto",
    }[protocol]


@asynccontextmanager
async def watching(
    client: httpx.AsyncClient, token: str, vault_id: str, since: int, protocol: str = "connect-json"
) -> AsyncIterator[Watch]:
    request = vault_pb2.WatchChangesRequest(vault_id=vault_id, since_sequence=since)
    body = json_format.MessageToJson(request).encode() if protocol == "connect-json" else request.SerializeToString()
    headers = {"Content-Type": _content_type(protocol), "Authorization": f"Bearer {token}"}
    if protocol.startswith("connect"):
        headers["Connect-Protocol-Version"] = "1"
    else:
        headers["X-Grpc-Web"] = "1"
    envelope = struct.pack(">BI", 0, len(body)) + body
    async with client.stream("POST", WATCH, content=envelope, headers=headers) as response:
        yield Watch(response, protocol)
