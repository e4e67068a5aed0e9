"""The opaque token format and how tokens are kept.

A token is `zkp_` + 32 random bytes in base62 (43 characters) + their CRC32 in
base62 (6 characters): the prefix and checksum let secret scanners recognise a
leaked token without a database. The server stores only HMAC-SHA256(pepper,
token), so a stolen store yields no usable token.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import zlib
from typing import Final

PREFIX: Final = "zkp_"
_ALPHABET: Final = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_BODY_LEN: Final = 43  # ceil(256 / log2(62))
_CHECK_LEN: Final = 6  # ceil(32 / log2(62))
TOKEN_LENGTH: Final = len(PREFIX) + _BODY_LEN + _CHECK_LEN
_SHAPE: Final = re.compile(rf"{PREFIX}[0-9A-Za-z]{{{_BODY_LEN + _CHECK_LEN}}}")
PEPPER_BYTES: Final = 32


_PAIRS: Final = tuple(a + b for a in _ALPHABET for b in _ALPHABET)  # two digits for each value below 62**2


def _base62(value: int, width: int) -> str:
    # Two digits per division: half the big-integer divisions of one per digit.
    pairs = []
    for _ in range(width // 2):
        value, pair = divmod(value, 62 * 62)
        pairs.append(_PAIRS[pair])
    if width % 2:
        pairs.append(_ALPHABET[value % 62])
    return "".join(reversed(pairs))


def _crc_digits(value: int) -> str:
    # Unrolled rather than _base62's loop, which was slower: the checksum runs on every authenticated call.
    a, f = divmod(value, 62)
    a, e = divmod(a, 62)
    a, d = divmod(a, 62)
    a, c = divmod(a, 62)
    a, b = divmod(a, 62)
    return _ALPHABET[a] + _ALPHABET[b] + _ALPHABET[c] + _ALPHABET[d] + _ALPHABET[e] + _ALPHABET[f]


def _checksum(body: str) -> str:
    return _crc_digits(zlib.crc32(body.encode()))


def new_token() -> str:
    body = _base62(int.from_bytes(secrets.token_bytes(32), "big"), _BODY_LEN)
    return PREFIX + body + _checksum(body)


def is_well_formed(candidate: str) -> bool:
    """Has the token format, checksum included. Says nothing of whether it exists."""
    if len(candidate) != TOKEN_LENGTH or not _SHAPE.fullmatch(candidate):
        return False
    body = candidate[len(PREFIX) : len(PREFIX) + _BODY_LEN]
    return hmac.compare_digest(_checksum(body), candidate[-_CHECK_LEN:])


def find_in(text: str) -> list[str]:
    """Every well-formed token inside a longer text (a URL, a header), checksums checked."""
    if PREFIX not in text:
        return []
    return [match.group() for match in _SHAPE.finditer(text) if is_well_formed(match.group())]


def new_token_id() -> str:
    """A public handle of a token, safe to log."""
    return "tok_" + secrets.token_hex(12)


class TokenHasher:
    """HMAC-SHA256 with the server's pepper: the only form in which tokens are stored."""

    def __init__(self, pepper: bytes) -> None:
        if len(pepper) < PEPPER_BYTES:
            msg = f"the token pepper must have at least {PEPPER_BYTES} bytes"
            raise ValueError(msg)
        # Keyed once: copying the keyed state per call skips the key schedule.
        self._keyed = hmac.new(pepper, digestmod=hashlib.sha256)

    def __call__(self, token: str) -> bytes:
        mac = self._keyed.copy()
        mac.update(token.encode())
        return mac.digest()

    def derive_key(self, purpose: str) -> bytes:
        """A key of its own for another use of the pepper (signing page tokens, say). A NUL
        byte never occurs in a token, so no derived key equals a token's stored hash."""
        mac = self._keyed.copy()
        mac.update(b"\0zkplatform key: " + purpose.encode())
        return mac.digest()
