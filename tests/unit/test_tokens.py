"""The token format: prefix, 32 random bytes in base62, CRC32 checksum; HMAC at rest."""

from __future__ import annotations

import re

import pytest

from zkplatform.domain import tokens


def test_new_tokens_have_the_format_and_differ() -> None:
    minted = {tokens.new_token() for _ in range(200)}

    assert len(minted) == 200
    for token in minted:
        assert re.fullmatch(r"zkp_[0-9A-Za-z]{49}", token), token
        assert tokens.is_well_formed(token)


def test_a_changed_character_breaks_the_checksum() -> None:
    token = tokens.new_token()
    body_char = token[10]
    altered = token[:10] + ("a" if body_char != "a" else "b") + token[11:]

    assert not tokens.is_well_formed(altered)


@pytest.mark.parametrize(
    "candidate", ["", "zkp_", "Bearer", "zkp_" + "0" * 48, "zkp_" + "0" * 50, "xyz_" + "0" * 49, "zkp_" + "-" * 49]
)
def test_malformed_candidates_are_refused(candidate: str) -> None:
    assert not tokens.is_well_formed(candidate)


def test_stored_form_is_an_hmac_keyed_by_the_pepper() -> None:
    token = tokens.new_token()
    first = tokens.TokenHasher(b"a" * 32)
    second = tokens.TokenHasher(b"b" * 32)

    assert first(token) == first(token)
    assert first(token) != second(token)
    assert len(first(token)) == 32
    assert token.encode() not in first(token)


def test_short_peppers_are_refused() -> None:
    with pytest.raises(ValueError, match="at least 32 bytes"):
        tokens.TokenHasher(b"short")


@pytest.mark.parametrize(
    ("value", "width", "digits"),
    [(0, 43, "0" * 43), (61, 3, "00z"), (62, 3, "010"), (62**2 + 1, 3, "101"), (2**256 - 1, 43, None)],
)
def test_base62_is_big_endian_over_the_whole_width(value: int, width: int, digits: str | None) -> None:
    encoded = tokens._base62(value, width)  # the digits of a token's body

    assert len(encoded) == width
    assert encoded == digits or digits is None
    assert sum(tokens._ALPHABET.index(c) * 62**n for n, c in enumerate(reversed(encoded))) == value
