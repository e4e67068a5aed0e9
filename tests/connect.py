"""A minimal Connect unary caller for tests: real HTTP requests, both codecs."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, TypeVar

import httpx
from google.protobuf import json_format
from google.protobuf.message import Message

M = TypeVar("M", bound=Message)

VAULT_DELETE = "/platform.v1.VaultService/DeleteItem"
BROKER_MINT = "/platform.v1.BrokerService/MintUserApiToken"


@dataclass(frozen=True)
class Codec:
    name: str
    content_type: str

    def encode(self, message: Message) -> bytes:
        if self.name == "json":
            return json_format.MessageToJson(message).encode()
        return message.SerializeToString()

    def decode(self, data: bytes, message_class: type[M]) -> M:
        message = message_class()
        if self.name == "json":
            json_format.Parse(data, message)
        else:
            message.ParseFromString(data)
        return message


JSON = Codec("json", "application/json")
PROTO = Codec("proto", "application/proto")
CODECS = (JSON, PROTO)


def headers(codec: Codec, token: str | None = None, **extra: str) -> dict[str, str]:
    result = {"Content-Type": codec.content_type, "Connect-Protocol-Version": "1"}
    if token is not None:
        result["Authorization"] = f"Bearer {token}"
    result.update(extra)
    return result


def error_of(response: httpx.Response) -> dict[str, Any]:
    """The Connect error body (always JSON, whatever the codec)."""
    assert response.headers["content-type"].startswith("application/json"), response.headers
    body: dict[str, Any] = json.loads(response.content)
    return body


def detail(error: dict[str, Any], type_name: str) -> dict[str, Any]:
    """The `debug` form of the one detail of that type."""
    matching = [d for d in error.get("details", []) if d["type"] == type_name]
    assert len(matching) == 1, error
    debug: dict[str, Any] = matching[0]["debug"]
    return debug


def brief(error: dict[str, Any]) -> dict[str, str]:
    """An error's code, message and ErrorInfo reason (after checking it has exactly one ErrorInfo,
    in the platform's domain)."""
    info = detail(error, "google.rpc.ErrorInfo")
    assert info["domain"] == "zkplatform.dev", error
    return {"code": error["code"], "message": error["message"], "reason": info["reason"]}


class Sending:
    """An ASGI app, keeping the answer bodies it has sent so far with their paths: the
    in-process transport hands a stream's messages over only once it ends, so a test that
    must act after a watch sent something waits on `sent` instead."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.bodies: list[tuple[str, bytes]] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        async def sending(message: Any) -> None:
            await send(message)
            if message["type"] == "http.response.body" and message.get("body"):
                self.bodies.append((scope["path"], bytes(message["body"])))

        await self.app(scope, receive, sending)

    def sent(self, method: str, data: bytes = b"") -> int:
        """How many bodies the calls of `method` (a procedure's last part) sent so far that hold `data`."""
        return sum(path.endswith(f"/{method}") and data in body for path, body in self.bodies)
