"""ListItems page tokens: opaque to clients, and only ever read as this server wrote them.

A token carries where the next page starts (after which item_id) and the vault's
sequence number when the listing's first page was read, so that every page of one
listing answers the same cursor. It is base64url (no padding) of

    version (1 byte) | sequence (8 bytes, big-endian) | after_item_id (UTF-8) | MAC (16 bytes)

where the MAC is HMAC-SHA256 under the server's key, truncated to 16 bytes, over the
version, the body and what the token is bound to: the tenant, the vault and the
show_deleted filter. Those are not in the token; a token presented for another
tenant, vault or filter fails its MAC like a tampered one, so a client can neither
forge a position nor reuse one across listings. Nothing in it is secret (the client
saw the item ids and the cursor), so it is signed, not encrypted.
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
_HEADER = struct.Struct(">BQ")  # version, sequence
# The longest token read: an item id is at most 64 characters, 256 bytes of UTF-8 at worst.
_MAX_TOKEN_BYTES = _HEADER.size + 256 + _MAC_BYTES
FIELD = "pageToken"


@dataclass(frozen=True, slots=True)
class PageState:
    """Where a listing stands: its first page's sequence, and the last item_id already listed."""

    sequence: int
    after_item_id: str


class PageTokens:
    def __init__(self, key: bytes) -> None:
        if len(key) < 32:  # HMAC-SHA256's own strength
            msg = "the page token key must have at least 32 bytes"
            raise ValueError(msg)
        self._key = key

    def issue(self, *, tenant_id: str, vault_id: str, show_deleted: bool, sequence: int, after_item_id: str) -> str:
        body = _HEADER.pack(_VERSION, sequence) + after_item_id.encode()
        mac = self._mac(body, tenant_id, vault_id, show_deleted=show_deleted)
        return _encode(body + mac)

    def read(self, token: str, *, tenant_id: str, vault_id: str, show_deleted: bool) -> PageState:
        """The state a token of ours carries; InvalidArgument naming pageToken for
        anything else: garbage, a tampered token, or one issued for another listing."""
        raw = _decode(token)
        if raw is None or len(raw) < _HEADER.size + _MAC_BYTES or len(raw) > _MAX_TOKEN_BYTES:
            raise _refused("is not a page token of this server")
        body, mac = raw[:-_MAC_BYTES], raw[-_MAC_BYTES:]
        if body[0] != _VERSION:
            raise _refused("is not a page token of this server")
        if not hmac.compare_digest(mac, self._mac(body, tenant_id, vault_id, show_deleted=show_deleted)):
            raise _refused("was not issued for this vault and filter, or was altered")
        _, sequence = _HEADER.unpack_from(body)
        # The MAC matched, so these bytes are what issue() wrote: valid UTF-8.
        return PageState(sequence, body[_HEADER.size :].decode())

    def _mac(self, body: bytes, tenant_id: str, vault_id: str, *, show_deleted: bool) -> bytes:
        # Each binding is length-prefixed, so no two different bindings read as the same bytes.
        message = b"".join(
            (
                _prefixed(tenant_id.encode()),
                _prefixed(vault_id.encode()),
                b"\x01" if show_deleted else b"\x00",
                body,
            )
        )
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
