"""Page tokens: what a listing's next page needs, signed for one tenant, vault and filter."""

from __future__ import annotations

import base64
import re

import pytest

from tests.world import PEPPER
from zkplatform.domain.errors import InvalidArgument
from zkplatform.domain.paging import PageTokens, Position
from zkplatform.wiring import page_token_key

TOKENS = PageTokens(page_token_key(PEPPER))


LISTING = ("acme", "acme-shared", "live")


def issue(sequence: int = 42, after_item_id: str = "item-7") -> str:
    return TOKENS.issue(Position(sequence, after_item_id), *LISTING)


def read(token: str, *listing: str) -> Position:
    return TOKENS.read(token, *(listing or LISTING))


def test_a_token_reads_back_what_it_was_issued_with() -> None:
    for sequence, after in ((0, "a"), (42, "item-7"), (2**63 - 1, "x" * 64), (7, "Ωmega:é")):
        token = issue(sequence, after)
        assert re.fullmatch(r"[A-Za-z0-9_-]+", token)
        assert len(token) <= 1024  # the request field's limit
        assert read(token) == Position(sequence, after)


@pytest.mark.parametrize(
    "listing",
    [
        ("globex", "acme-shared", "live"),
        ("acme", "acme-private", "live"),
        ("acme", "acme-shared", "with tombstones"),
        ("acme", "acme-shared"),
        # The bindings are length-prefixed: moving characters between them is another binding.
        ("acmeacme-shared", "", "live"),
        ("acm", "eacme-shared", "live"),
    ],
)
def test_a_token_is_refused_for_another_listing(listing: tuple[str, ...]) -> None:
    with pytest.raises(InvalidArgument) as raised:
        read(issue(), *listing)
    assert [v.field for v in raised.value.violations] == ["pageToken"]


def test_a_token_is_refused_under_another_key() -> None:
    other = PageTokens(page_token_key(b"another-pepper-of-thirty-two-by!"))
    with pytest.raises(InvalidArgument):
        other.read(issue(), *LISTING)


def test_a_forged_position_or_version_is_refused() -> None:
    """Whoever changes the position in a token of theirs cannot make its MAC."""
    raw = base64.urlsafe_b64decode(issue() + "==")
    for forged in (raw[:1] + (0).to_bytes(8, "big") + raw[9:], b"\x02" + raw[1:], raw[:-1]):
        with pytest.raises(InvalidArgument, match="pageToken"):
            read(base64.urlsafe_b64encode(forged).rstrip(b"=").decode())


@pytest.mark.parametrize("garbage", ["", "x", "====", "a b", "ä", "\x00", "A" * 2000, "-_-_"])
def test_garbage_is_refused(garbage: str) -> None:
    with pytest.raises(InvalidArgument) as raised:
        read(garbage)
    assert [v.field for v in raised.value.violations] == ["pageToken"]


def test_only_the_form_issued_is_read() -> None:
    """base64 decoders skip stray characters and ignore spare bits: a token altered that way is refused too."""
    token = issue()
    for other in (token + "=", token + "==", token[:10] + "!" + token[10:], token[:-1] + chr(ord(token[-1]) ^ 1)):
        with pytest.raises(InvalidArgument):
            read(other)


def test_the_key_is_derived_from_the_pepper_and_long_enough() -> None:
    assert page_token_key(PEPPER) != PEPPER
    assert page_token_key(PEPPER) == page_token_key(PEPPER)
    assert page_token_key(PEPPER) != page_token_key(PEPPER[::-1])
    with pytest.raises(ValueError, match="32 bytes"):
        PageTokens(b"short")
