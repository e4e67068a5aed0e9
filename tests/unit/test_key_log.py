"""Recipient keys' canonical form and the key log's bytes and chain, without a store: what
clients recompute, so it must be exactly what directory.proto says."""

from __future__ import annotations

import base64
import hashlib
import json
from dataclasses import replace

import pytest
from joserfc import jwk

from zkplatform.domain.audit import GENESIS, chain
from zkplatform.domain.key_log import (
    EMPTY,
    KeyLogAction,
    KeyLogCheck,
    KeyLogEntry,
    KeyLogHead,
    KeyLogRecord,
    UnreadableEntry,
    appended,
)
from zkplatform.domain.recipient_keys import public_key


@pytest.mark.parametrize("key", [jwk.OKPKey.generate_key("X25519"), jwk.ECKey.generate_key("P-256")], ids=["x", "p"])
def test_a_keys_id_is_its_rfc7638_thumbprint_and_the_hash_of_its_text(key: jwk.OKPKey | jwk.ECKey) -> None:
    published = public_key(json.dumps({"kid": "k", **key.as_dict(private=False)}, indent=2))

    assert published.key_id == key.thumbprint()
    digest = hashlib.sha256(published.jwk.encode()).digest()
    assert published.key_id == base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
    assert published.jwk == json.dumps(json.loads(published.jwk), sort_keys=True, separators=(",", ":"))
    assert "kid" not in json.loads(published.jwk)


ENTRY = KeyLogEntry(
    KeyLogAction.PUBLISHED,
    "acme",
    "alice",
    "g0TiVB_J3Y6GkpSBKCUo73WhtB3YHftwNxxQbiLtO00",
    '{"crv":"X25519","kty":"OKP","x":"s_Od1mtvGolRL8YIC3R2gP4ielWH6W-Cs0ZNN9g1sH8"}',
    1_800_000_000,
)


def test_the_canonical_bytes_are_as_directory_proto_writes_them() -> None:
    assert ENTRY.canonical() == (
        b'{"action":"KEY_LOG_ACTION_PUBLISHED",'
        b'"jwk":{"crv":"X25519","kty":"OKP","x":"s_Od1mtvGolRL8YIC3R2gP4ielWH6W-Cs0ZNN9g1sH8"},'
        b'"keyId":"g0TiVB_J3Y6GkpSBKCUo73WhtB3YHftwNxxQbiLtO00","principalId":"alice","tenantId":"acme",'
        b'"time":1800000000}'
    )
    assert KeyLogEntry.read(ENTRY.canonical()) == ENTRY


@pytest.mark.parametrize(
    "data",
    [
        ENTRY.canonical().replace(b",", b", "),  # whitespace
        ENTRY.canonical().replace(b"KEY_LOG_ACTION_PUBLISHED", b"KEY_LOG_ACTION_DELETED"),
        ENTRY.canonical().replace(b'"time":1800000000', b'"time":"1800000000"'),
        ENTRY.canonical()[:-1] + b',"extra":1}',
        b"[]",
        b"\xff",
    ],
    ids=["spaced", "unknown action", "time as text", "extra member", "not an object", "not utf-8"],
)
def test_bytes_that_are_not_an_entrys_canonical_form_are_unreadable(data: bytes) -> None:
    with pytest.raises(UnreadableEntry):
        KeyLogEntry.read(data)


def test_entries_chain_from_the_zero_hash() -> None:
    revoked = replace(ENTRY, action=KeyLogAction.REVOKED, time=ENTRY.time + 5)

    one, two = appended(EMPTY, "acme", [ENTRY, revoked])

    assert (one.index, one.hash) == (1, chain(GENESIS, ENTRY.canonical()))
    assert (two.index, two.hash) == (2, chain(one.hash, revoked.canonical()))
    check = KeyLogCheck("acme")
    assert (check.check(one), check.check(two), check.finish(two.head)) == (None, None, None)
    assert check.finish(KeyLogHead(2, GENESIS)) is not None


def test_an_entry_of_another_tenant_breaks_the_log_even_with_a_matching_hash() -> None:
    (foreign,) = appended(EMPTY, "acme", [replace(ENTRY, tenant_id="globex")])

    broken = KeyLogCheck("acme").check(KeyLogRecord("acme", 1, foreign.data, foreign.hash))

    assert broken is not None
    assert str(broken) == "tenant acme: key log entry 1 names another tenant (globex)"
