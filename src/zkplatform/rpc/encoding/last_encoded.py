"""A codec that remembers its last encoding: the messages of a change sent to many watches are
one message object (messages/convert.py's WatchMessages), so it is encoded once per codec, not
once per watch. Keyed by identity, and the message is held, so its id cannot be reused: this is
right as long as no message is changed once answered, which no servicer of this service does."""

from __future__ import annotations

from typing import Generic, TypeVar

from connectrpc.codec import Codec
from google.protobuf.message import Message

_M = TypeVar("_M", bound=Message)


class LastEncoded(Codec[Message, _M], Generic[_M]):
    def __init__(self, codec: Codec[Message, _M]) -> None:
        self._codec = codec
        self._last: tuple[Message, bytes] | None = None

    def name(self) -> str:
        return self._codec.name()

    def encode(self, message: Message) -> bytes:
        last = self._last
        if last is not None and last[0] is message:
            return last[1]
        encoded = self._codec.encode(message)
        self._last = (message, encoded)
        return encoded

    def decode(self, data: bytes | bytearray, message_class: type[_M]) -> _M:
        return self._codec.decode(data, message_class)
