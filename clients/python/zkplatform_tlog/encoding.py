"""The strict text encodings the C2SP specs use: standard base64 (RFC 4648 section 4, padded) and
ASCII decimal without leading zeros.

Python's own decoders are lenient (`int()` takes "+5", " 5", "1_0" and non-ASCII digits;
`base64.b64decode` ignores characters outside the alphabet unless told not to, and accepts
non-canonical trailing bits), so every parser of this package goes through these instead: one
value has exactly one accepted spelling.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Final

_BASE64: Final = re.compile(r"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?")
_DECIMAL: Final = re.compile(r"0|[1-9][0-9]*")
_LOWER_HEX: Final = re.compile(r"[0-9a-f]*")

# Tree sizes, indexes and timestamps are unsigned 64-bit integers in every implementation.
UINT64_MAX: Final = (1 << 64) - 1


def b64encode(data: bytes) -> str:
    """Standard base64 with padding."""
    return base64.b64encode(data).decode("ascii")


def b64decode(text: str) -> bytes | None:
    """The bytes of a canonical standard-base64 text, or None: only the alphabet, padding exactly
    where required, and zero trailing bits (so that re-encoding gives back the same text)."""
    if _BASE64.fullmatch(text) is None:
        return None
    try:
        data = base64.b64decode(text, validate=True)
    except binascii.Error:  # pragma: no cover - the pattern admits only decodable text
        return None
    # Non-zero bits after the last full byte decode to the same bytes as the canonical spelling.
    return data if b64encode(data) == text else None


def parse_decimal(text: str, maximum: int = UINT64_MAX) -> int | None:
    """The value of an ASCII decimal without leading zeros ("0" for zero), at most `maximum`."""
    if _DECIMAL.fullmatch(text) is None:
        return None
    value = int(text)
    return value if value <= maximum else None


def is_lower_hex(text: str) -> bool:
    """Only the characters of lowercase hex (and so no sign, prefix or spaces)."""
    return _LOWER_HEX.fullmatch(text) is not None


def has_control(text: str) -> bool:
    """Any character below U+0020 other than newline: the signed-note format forbids them."""
    return any(ch < " " and ch != "\n" for ch in text)


def is_utf8(text: str) -> bool:
    """Encodable as UTF-8 (a Python str can hold lone surrogates, which a note cannot)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
