"""Page tokens: what a listing's next page needs (its epoch too), signed for one tenant, vault
and filter; and where a page is cut by its bytes."""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import struct

import pytest

from tests.world import PEPPER
from zkplatform.domain.errors import InvalidArgument
from zkplatform.domain.models import new_epoch
from zkplatform.domain.paging import PAGE_BYTES, PAGE_FRAME_BYTES, PageTokens, Position, fitting
from zkplatform.wiring import page_token_key

TOKENS = PageTokens(page_token_key(PEPPER))


LISTING = ("acme", "acme-shared", "live")


EPOCH = new_epoch()


def issue(sequence: int = 42, after_item_id: str = "item-7", epoch: str = EPOCH) -> str:
    return TOKENS.issue(Position(sequence, after_item_id, epoch), *LISTING)


def read(token: str, *listing: str) -> Position:
    return TOKENS.read(token, *(listing or LISTING))


def test_a_token_reads_back_what_it_was_issued_with() -> None:
    for sequence, after in ((0, "a"), (42, "item-7"), (2**63 - 1, "x" * 64), (7, "Ωmega:é")):
        for epoch in (EPOCH, "", "A-_z" * 16):
            token = issue(sequence, after, epoch)
            assert re.fullmatch(r"[A-Za-z0-9_-]+", token)
            assert len(token) <= 1024  # the request field's limit
            assert read(token) == Position(sequence, after, epoch)


def test_the_longest_token_is_far_below_the_request_limit() -> None:
    """An epoch of 64 characters and an id of 64 four-byte characters: what PAGE_FRAME_BYTES allows for."""
    token = issue(-(2**63), "\U0001f600" * 64, "e" * 64)
    assert read(token).after == "\U0001f600" * 64
    assert len(token) == 462
    with pytest.raises(ValueError, match="64 bytes"):
        issue(epoch="e" * 65)


def test_a_token_of_before_epochs_reads_as_of_no_epoch() -> None:
    """Version 1 had no epoch: still read (a listing of tokens goes on across the upgrade), with
    epoch "", which no store has: a listing of items started over."""
    body = struct.pack(">Bq", 1, 42) + b"item-7"
    bound = b"".join(struct.pack(">I", len(b.encode())) + b.encode() for b in LISTING)
    mac = hmac.new(page_token_key(PEPPER), bound + body, hashlib.sha256).digest()[:16]
    token = base64.urlsafe_b64encode(body + mac).rstrip(b"=").decode()

    assert read(token) == Position(42, "item-7", "")


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
    forgeries = (
        raw[:1] + (0).to_bytes(8, "big") + raw[9:],  # another position
        raw[:10] + new_epoch().encode() + raw[10 + len(EPOCH) :],  # another epoch: expired tokens made current
        b"\x01" + raw[1:],  # read as of before epochs
        b"\x03" + raw[1:],
        raw[:-1],
    )
    for forged in forgeries:
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


# Where a page is cut by its bytes


def test_a_page_takes_every_element_that_fits() -> None:
    assert fitting([10, 20, 30], lambda size: size) == 3
    assert fitting([], lambda size: size) == 0


def test_a_page_stops_before_the_element_that_would_exceed_it() -> None:
    room = PAGE_BYTES - PAGE_FRAME_BYTES
    assert fitting([room // 2, room - room // 2, 1], lambda size: size) == 2
    assert fitting([room // 2, room - room // 2 + 1, 1], lambda size: size) == 1
    assert fitting([1] * (room + 5), lambda size: size) == room


def test_a_page_always_holds_its_first_element() -> None:
    assert fitting([PAGE_BYTES * 2, 1], lambda size: size) == 1


def test_each_element_is_measured_once_and_none_after_the_cut() -> None:
    measured: list[int] = []

    def size_of(element: int) -> int:
        measured.append(element)
        return PAGE_BYTES // 3

    assert fitting(list(range(10)), size_of) == 2
    assert measured == [0, 1, 2]
