"""Pages: where they are cut, and their tokens.

Every page (ListItems, ListChanges, ListTokens, ListVaults, each WatchChanges message)
holds at most its page size of elements (`page_limit`: a request's page size, 0 for the
default, a larger one than the maximum taken as the maximum, AIP-158), and stops before its
answer's binary encoding would exceed PAGE_BYTES, with at least one element (`fitting`).
What an element takes is computed from its values' lengths (ElementSizes,
messages/sizes.py), never by encoding it: the answer is encoded once, when it is sent.

A listing that pages by key (ListItems, ListTokens, ListVaults) does not count rows to skip:
its next page starts after a position, which its page token carries: a number (the
listing's cursor for items, the issue time for tokens, 0 for vaults), the last id already
listed, and the store's epoch the listing began in (items only). A token is base64url (no
padding) of

    version 2 (1 byte) | number (8 bytes, big-endian, signed)
        | epoch length (1 byte) | epoch (ASCII) | after (UTF-8) | MAC (16 bytes)

where the MAC is HMAC-SHA256 under the listing's key, truncated to 16 bytes, over
what the token is bound to (the tenant, and whatever else fixes the listing: a
vault and a filter, a principal) and then the version and the body. The bindings are
not in the token: a token presented for another listing fails its MAC like a tampered
one, so a client can neither forge a position nor reuse one across listings. The
epoch is in it, not bound to it, so that a token of another epoch reads as such and
is refused as expired (the store was restored since), not as a forgery. Tokens of
version 1 (no epoch byte or epoch) are still read, with no epoch. Nothing in a token
is secret (the client saw the ids), so it is signed, not encrypted.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

from zkplatform.domain.errors import FieldViolation, InvalidArgument, PageTokenInvalid
from zkplatform.domain.models import Item, ItemChange, Role, TokenRecord, Vault

# A page stops before its answer's binary encoding would exceed this: 3 MiB, so that the
# usual 4 MiB receive limit of gRPC clients (grpcio, grpc-go, grpc-java by default) holds
# every page with room to spare. Measured on the binary encoding the client receives: the
# same answer in JSON may be larger (field names, quoting, int64 as strings), which JSON
# clients, with no such default limit, read all the same.
PAGE_BYTES = 3 * 1024 * 1024
# What an answer holds besides its elements, at most, with their tags and lengths: a next
# page token (at most 462 characters), a cursor (a vault id of at most 64 characters, a
# sequence, an epoch of at most 64), has_more.
PAGE_FRAME_BYTES = 1024

# A page's elements when the request says 0, and at most whatever it says.
DEFAULT_PAGE_SIZE = 100
MAX_PAGE_SIZE = 1000

T = TypeVar("T")


class ElementSizes(Protocol):
    """What one element of a page takes in its answer's binary encoding, at most: the element's
    message with its field's tag and length prefix (messages/sizes.py, where the wire format is
    known)."""

    def item(self, item: Item) -> int: ...

    def change(self, change: ItemChange) -> int: ...

    def token(self, record: TokenRecord, role: Role) -> int: ...

    def vault(self, vault: Vault) -> int: ...


def page_limit(page_size: int) -> int:
    """The most elements a page holds for a request's `page_size`: 0 means the default, and a
    larger one than the maximum means the maximum (AIP-158: a client that asks for more gets
    what the server gives, and pages on, rather than an error)."""
    if page_size < 0:
        raise InvalidArgument([FieldViolation("pageSize", f"must be at least 0 (0 means {DEFAULT_PAGE_SIZE})")])
    return min(page_size or DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)


def fitting(elements: Sequence[T], size_of: Callable[[T], int]) -> int:
    """How many of `elements`, from the first, one page holds: all of them, or as many as fit in
    PAGE_BYTES with the answer's other fields, and never none, so that every page moves its
    listing on (the contract's limits keep one element far below PAGE_BYTES)."""
    room = PAGE_BYTES - PAGE_FRAME_BYTES
    for count, element in enumerate(elements):
        room -= size_of(element)
        if room < 0:
            return max(count, 1)
    return len(elements)


_VERSION = 2
_VERSION_WITHOUT_EPOCH = 1  # before epochs: still read, as of no epoch
_MAC_BYTES = 16
_KEY_BYTES = 32  # HMAC-SHA256's own strength
_HEADER = struct.Struct(">Bq")  # version, number
_MAX_EPOCH_BYTES = 64  # the contract's bound on an epoch: characters of base64url, one byte each
# The longest token read: an epoch and its length, an id of at most 64 characters (256 bytes of UTF-8 at worst).
_MAX_TOKEN_BYTES = _HEADER.size + 1 + _MAX_EPOCH_BYTES + 256 + _MAC_BYTES
FIELD = "pageToken"


@dataclass(frozen=True, slots=True)
class Position:
    """Where a listing stands: its number (a cursor, a time), the last id already listed, and
    the store's epoch the listing began in ("" for a listing that does not depend on one)."""

    number: int
    after: str
    epoch: str = ""


class PageTokens:
    def __init__(self, key: bytes) -> None:
        if len(key) < _KEY_BYTES:
            msg = f"the page token key must have at least {_KEY_BYTES} bytes"
            raise ValueError(msg)
        self._key = key

    def issue(self, position: Position, *bound_to: str) -> str:
        """The token of the page after `position`, good only for the listing `bound_to` names."""
        epoch = position.epoch.encode()
        if len(epoch) > _MAX_EPOCH_BYTES:
            msg = f"an epoch has at most {_MAX_EPOCH_BYTES} bytes"
            raise ValueError(msg)
        body = _HEADER.pack(_VERSION, position.number) + bytes([len(epoch)]) + epoch + position.after.encode()
        return _encode(body + self._mac(body, bound_to))

    def read(self, token: str, *bound_to: str) -> Position:
        """The position a token of ours carries; InvalidArgument naming pageToken for
        anything else: garbage, a tampered token, or one issued for another listing."""
        raw = _decode(token)
        if (
            raw is None
            or not _HEADER.size + _MAC_BYTES <= len(raw) <= _MAX_TOKEN_BYTES
            or raw[0] not in (_VERSION, _VERSION_WITHOUT_EPOCH)
        ):
            raise _refused("is not a page token of this server")
        body, mac = raw[:-_MAC_BYTES], raw[-_MAC_BYTES:]
        if not hmac.compare_digest(mac, self._mac(body, bound_to)):
            raise _refused("was not issued for this listing, or was altered")
        version, number = _HEADER.unpack_from(body)
        # The MAC matched, so these bytes are what issue() wrote: an epoch within its
        # length, then valid UTF-8.
        rest, epoch = body[_HEADER.size :], b""
        if version == _VERSION:
            epoch, rest = rest[1 : 1 + rest[0]], rest[1 + rest[0] :]
        return Position(number, rest.decode(), epoch.decode())

    def _mac(self, body: bytes, bound_to: tuple[str, ...]) -> bytes:
        # Each binding is length-prefixed, so no two different bindings read as the same bytes.
        message = b"".join(_prefixed(binding.encode()) for binding in bound_to) + body
        return hmac.new(self._key, message, hashlib.sha256).digest()[:_MAC_BYTES]


def _prefixed(value: bytes) -> bytes:
    return struct.pack(">I", len(value)) + value


def _decode(token: str) -> bytes | None:
    """The bytes of a token in the one form issue() writes; None for any other text
    (the decoder would skip stray characters and ignore spare bits: a token altered
    that way must not read as the original)."""
    if not token.isascii():
        return None
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
    except (binascii.Error, ValueError):
        return None
    return raw if _encode(raw) == token else None


def _encode(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def _refused(why: str) -> PageTokenInvalid:
    return PageTokenInvalid([FieldViolation(FIELD, f"{why}: start again from the first page (no page token)")])
