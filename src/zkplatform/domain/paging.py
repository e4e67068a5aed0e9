"""Page tokens: opaque to clients, and only ever read as this server wrote them.

Every keyset listing (ListItems, ListTokens) continues after a position: a number
(the listing's cursor for items, the issue time for tokens) and the last id already
listed. A token is base64url (no padding) of

    version (1 byte) | number (8 bytes, big-endian, signed) | after (UTF-8) | MAC (16 bytes)

where the MAC is HMAC-SHA256 under the listing's key, truncated to 16 bytes, over
what the token is bound to (the tenant, and whatever else fixes the listing: a
vault and a filter, a principal) and then the version and the body. The bindings are
not in the token: a token presented for another listing fails its MAC like a tampered
one, so a client can neither forge a position nor reuse one across listings. Nothing
in it is secret (the client saw the ids), so it is signed, not encrypted.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import struct
from dataclasses import dataclass

from zkplatform.domain.errors import FieldViolation, InvalidArgument

_VERSION = 1
_MAC_BYTES = 16
_KEY_BYTES = 32  # HMAC-SHA256's own strength
_HEADER = struct.Struct(">Bq")  # version, number
# The longest token read: an id is at most 64 characters, 256 bytes of UTF-8 at worst.
_MAX_TOKEN_BYTES = _HEADER.size + 256 + _MAC_BYTES
FIELD = "pageToken"


@dataclass(frozen=True, slots=True)
class Position:
    """Where a listing stands: its number (a cursor, a time) and the last id already listed."""

    number: int
    after: str


class PageTokens:
    def __init__(self, key: bytes) -> None:
        if len(key) < _KEY_BYTES:
            msg = f"the page token key must have at least {_KEY_BYTES} bytes"
            raise ValueError(msg)
        self._key = key

    def issue(self, position: Position, *bound_to: str) -> str:
        """The token of the page after `position`, good only for the listing `bound_to` names."""
        body = _HEADER.pack(_VERSION, position.number) + position.after.encode()
        return _encode(body + self._mac(body, bound_to))

    def read(self, token: str, *bound_to: str) -> Position:
        """The position a token of ours carries; InvalidArgument naming pageToken for
        anything else: garbage, a tampered token, or one issued for another listing."""
        raw = _decode(token)
        if raw is None or not _HEADER.size + _MAC_BYTES <= len(raw) <= _MAX_TOKEN_BYTES or raw[0] != _VERSION:
            raise _refused("is not a page token of this server")
        body, mac = raw[:-_MAC_BYTES], raw[-_MAC_BYTES:]
        if not hmac.compare_digest(mac, self._mac(body, bound_to)):
            raise _refused("was not issued for this listing, or was altered")
        _, number = _HEADER.unpack_from(body)
        # The MAC matched, so these bytes are what issue() wrote: valid UTF-8.
        return Position(number, body[_HEADER.size :].decode())

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


def _refused(why: str) -> InvalidArgument:
    return InvalidArgument([FieldViolation(FIELD, f"{why}: start again from the first page (no page token)")])
