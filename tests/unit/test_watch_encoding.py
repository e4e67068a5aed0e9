"""A change reaching many watches is converted once (WatchMessages) and encoded once per codec
(LastEncoded); an unequal page is converted again, and a message that is not the same object is
encoded again, however equal."""

from __future__ import annotations

from connectrpc.compat import google_protobuf_binary_codec
from google.protobuf.message import Message

from zkplatform.domain.sync import ListedChanges
from zkplatform.messages.convert import WatchMessages, watch_message
from zkplatform.rpc.encoding.codec import CompactJSONCodec
from zkplatform.rpc.encoding.last_encoded import LastEncoded
from zkplatform_api.platform.v1 import vault_pb2


class CountingCodec(CompactJSONCodec[vault_pb2.WatchChangesResponse]):
    """The JSON codec, its encodings counted."""

    def __init__(self) -> None:
        self.encoded = 0

    def encode(self, message: Message) -> bytes:
        self.encoded += 1
        return super().encode(message)


def test_equal_pages_of_a_vault_are_one_message_and_others_are_not() -> None:
    messages = WatchMessages(retention=60)
    page = ListedChanges((), 7, has_more=False, epoch="e1")

    first = messages.message("v1", page)
    again = messages.message("v1", ListedChanges((), 7, has_more=False, epoch="e1"))
    other_vault = messages.message("v2", page)
    caught_up = messages.message("v2", ListedChanges((), 7, has_more=False, epoch="e1", caught_up=True))

    assert again is first
    assert other_vault is not first
    assert other_vault == watch_message("v2", page, retention=60)
    assert caught_up.caught_up


def test_the_same_message_is_encoded_once_and_an_equal_one_again() -> None:
    counting = CountingCodec()
    codec = LastEncoded(counting)
    message = vault_pb2.WatchChangesResponse(caught_up=True)

    encodings = [codec.encode(message) for _ in range(3)]
    equal = codec.encode(vault_pb2.WatchChangesResponse(caught_up=True))

    assert encodings == [encodings[0]] * 3
    assert equal == encodings[0]
    assert counting.encoded == 2
    assert codec.name() == "json"
    assert LastEncoded(google_protobuf_binary_codec()).name() == "proto"
