"""ListTokens page tokens: opaque to clients, and only ever read as this server wrote them.

The same construction as the item pages of `paging.py`, for another position and
other bindings: base64url (no padding) of

    version (1 byte) | issued_at (8 bytes, big-endian) | after_token_id (ASCII) | MAC (16 bytes)

where the MAC is HMAC-SHA256 under a key derived from the token pepper, truncated
to 16 bytes, over the version, the body and what the token is bound to: the tenant
and the filter (a principal id, or `-` for every principal). Those are not in the
token; a token presented for another tenant or filter fails its MAC like a tampered
one. Nothing in it is secret (the client saw the ids and times), so it is signed,
not encrypted.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import struct

from zkplatform.domain.errors import FieldViolation, InvalidArgument

_VERSION = 1
_MAC_BYTES = 16
_HEADER = struct.Struct(">Bq")  # version, issued_at
_MAX_TOKEN_BYTES = _HEADER.size + 64 + _MAC_BYTES  # a token id is far shorter than 64 characters
FIELD = "pageToken"
_KEY_BYTES = 32


class TokenPages:
    def __init__(self, key: bytes) -> None:
        if len(key) < _KEY_BYTES:
            msg = f"the page token key must have at least {_KEY_BYTES} bytes"
            raise ValueError(msg)
        self._key = key

    def issue(self, *, tenant_id: str, listed: str, issued_at: int, token_id: str) -> str:
        """The token of the page after the token (issued_at, token_id), for this tenant and filter."""
        body = _HEADER.pack(_VERSION, issued_at) + token_id.encode()
        return _encode(body + self._mac(body, tenant_id, listed))

    def read(self, page_token: str, *, tenant_id: str, listed: str) -> tuple[int, str]:
        """The (issued_at, token_id) a page token of ours continues after; InvalidArgument naming
        pageToken for anything else: garbage, a tampered token, or one of another listing."""
        raw = _decode(page_token)
        if raw is None or not _HEADER.size + _MAC_BYTES <= len(raw) <= _MAX_TOKEN_BYTES or raw[0] != _VERSION:
            raise _refused("is not a page token of this server")
        body, mac = raw[:-_MAC_BYTES], raw[-_MAC_BYTES:]
        if not hmac.compare_digest(mac, self._mac(body, tenant_id, listed)):
            raise _refused("was not issued for this tenant and principal, or was altered")
        _, issued_at = _HEADER.unpack_from(body)
        return issued_at, body[_HEADER.size :].decode()  # the MAC matched: the ASCII issue() wrote

    def _mac(self, body: bytes, tenant_id: str, listed: str) -> bytes:
        # Each binding is length-prefixed, so no two different bindings read as the same bytes.
        message = _prefixed(tenant_id.encode()) + _prefixed(listed.encode()) + body
        return hmac.new(self._key, message, hashlib.sha256).digest()[:_MAC_BYTES]


def _prefixed(value: bytes) -> bytes:
    return struct.pack(">I", len(value)) + value


def _decode(token: str) -> bytes | None:
    """The bytes of a token in the one form issue() writes; None for any other text (the
    decoder would skip stray characters and ignore spare bits)."""
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
