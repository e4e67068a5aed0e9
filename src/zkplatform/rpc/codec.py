"""The JSON codec: compact output, proto3 JSON names, unknown fields ignored."""

from __future__ import annotations

import json
from typing import TypeVar

from connectrpc.codec import Codec
from google.protobuf import json_format
from google.protobuf.message import Message

_M = TypeVar("_M", bound=Message)


class CompactJSONCodec(Codec[Message, _M]):
    """Proto3 JSON without the indentation of connectrpc's default codec."""

    def name(self) -> str:
        return "json"

    def encode(self, message: Message) -> bytes:
        as_dict = json_format.MessageToDict(message)
        return json.dumps(as_dict, separators=(",", ":"), ensure_ascii=False).encode()

    def decode(self, data: bytes | bytearray, message_class: type[_M]) -> _M:
        message = message_class()
        json_format.Parse(bytes(data), message, ignore_unknown_fields=True)
        return message
