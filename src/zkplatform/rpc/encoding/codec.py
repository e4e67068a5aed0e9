"""The JSON codec: compact output, proto3 JSON names, unknown fields ignored, type errors named by field."""

from __future__ import annotations

import json
from typing import TypeVar

from connectrpc.code import Code
from connectrpc.codec import Codec
from google.protobuf.message import Message

from zkplatform.domain.errors import InvalidArgument
from zkplatform.messages.json_input import from_json
from zkplatform.messages.json_output import message_to_dict
from zkplatform.rpc.errors import refusal
from zkplatform_api.platform.v1.errors_pb2 import ErrorReason

_M = TypeVar("_M", bound=Message)


class CompactJSONCodec(Codec[Message, _M]):
    """Proto3 JSON without the indentation of connectrpc's default codec."""

    def name(self) -> str:
        return "json"

    def encode(self, message: Message) -> bytes:
        as_dict = message_to_dict(message)
        return json.dumps(as_dict, separators=(",", ":"), ensure_ascii=False).encode()

    def decode(self, data: bytes | bytearray, message_class: type[_M]) -> _M:
        try:
            return from_json(data, message_class)
        except InvalidArgument as error:  # connectrpc passes a ConnectError on as it is
            raise refusal(
                Code.INVALID_ARGUMENT, ErrorReason.REQUEST_MALFORMED, str(error), violations=error.violations
            ) from None
