"""messages/sizes.py against protobuf itself: what it computes from the values' lengths is what
ByteSize() says of the messages convert.py builds, for every field filled, every field empty,
and lengths on each side of a varint's byte boundaries. A field added to Item, ItemChange,
TokenInfo or Vault that convert.py fills fails here until sizes.py counts it."""

from __future__ import annotations

import pytest

from zkplatform.domain.models import (
    ALL_SCOPES,
    EncryptedPayload,
    Item,
    ItemChange,
    Role,
    Scope,
    TokenRecord,
    Vault,
    WrappedKey,
)
from zkplatform.messages.convert import item_to_proto, token_info_to_proto, vault_to_proto
from zkplatform.messages.sizes import PURGE_TIME_MAX, EncodedSizes
from zkplatform_api.platform.v1 import broker_pb2, vault_pb2

SIZES = EncodedSizes()
RETENTIONS = (0, 90 * 86_400, 36_500 * 86_400)  # none, the default, the most a setting allows


def item(
    ciphertext: str = "Y2lwaGVy",
    keys: int = 2,
    *,
    item_id: str = "item-1",
    title_hash: str = "dGl0bGU",
    payload_version: int = 1,
    updated_at: int = 1_800_000_000,
    version: int = 3,
) -> Item:
    return Item(
        item_id=item_id,
        tenant_id="acme",
        vault_id="acme-shared",
        version=version,
        kind="note",
        title_hash=title_hash,
        updated_at=updated_at,
        payload=EncryptedPayload("A256GCM", "bm9uY2U", "YWFk", ciphertext, payload_version),
        wrapped_keys=tuple(WrappedKey(f"recipient-{n}", "ECDH-ES+A256KW", "a" * (2048 - n)) for n in range(keys)),
    )


ITEMS = [
    item(),
    item(ciphertext="x" * 49_152, keys=256),  # the contract's largest item
    item(ciphertext="x" * 127, keys=0, title_hash=""),  # lengths at a varint's boundaries
    item(ciphertext="x" * 128, keys=1, payload_version=0),
    item(ciphertext="x" * 16_383, payload_version=-1),  # a negative int32: ten bytes (imports are checked, not this)
    item(ciphertext="x" * 16_384, item_id="Ωmega:é" * 9, title_hash="\U0001f600" * 32),  # multi-byte UTF-8
    item(updated_at=0, version=0),
    item(updated_at=2**40, version=2**62),
    Item("i", "t", "v", 1, "k", "", 1, EncryptedPayload("", "", "", "", 0), ()),  # a payload of empty fields
    # sealing version 2's fields
    Item("i", "t", "v", 1, "k", "", 1, EncryptedPayload("A256GCM", "n", "a", "c", 2, "C" * 43, "S" * 43, "s" * 86), ()),
    item().tombstone(1_800_000_000),
    item(item_id="x" * 64).tombstone(2**33),
]


@pytest.mark.parametrize("subject", ITEMS, ids=range(len(ITEMS)))
def test_an_items_size_is_what_protobuf_encodes(subject: Item) -> None:
    for retention in RETENTIONS:
        encoded = vault_pb2.ListItemsResponse()
        item_to_proto(subject, encoded.items.add(), retention=retention)
        computed = SIZES.item(subject)

        if subject.deleted:  # the purge time, counted at its most
            assert encoded.ByteSize() <= computed <= encoded.ByteSize() + PURGE_TIME_MAX - 4
        else:
            assert computed == encoded.ByteSize()


@pytest.mark.parametrize("sequence", [0, 1, 127, 128, 2**63 - 1])
def test_a_changes_size_is_what_protobuf_encodes(sequence: int) -> None:
    for subject in (ITEMS[0], ITEMS[1], ITEMS[2]):
        encoded = vault_pb2.ListChangesResponse()
        change = encoded.changes.add()
        item_to_proto(subject, change.item, retention=0)
        change.sequence = sequence

        assert SIZES.change(ItemChange(subject, sequence)) == encoded.ByteSize()


TOKENS = [
    TokenRecord("tok_" + "0" * 24, b"h", "acme", "alice", ALL_SCOPES, 1_800_000_000, 1_800_003_600),
    TokenRecord(
        "tok_" + "f" * 24,
        b"h",
        "t" * 64,
        "p" * 64,
        frozenset({Scope.VAULT_ITEMS_READ}),
        0,
        2**40,
        pop_key_id="k" * 43,
        minted=True,
        parent_token_id="tok_" + "1" * 24,
        last_used_at=1_800_000_060,
    ),
    TokenRecord("tok_" + "2" * 24, b"h", "acme", "svc", frozenset(), 1, 2, last_used_at=0),
]


@pytest.mark.parametrize("record", TOKENS, ids=range(len(TOKENS)))
@pytest.mark.parametrize("role", list(Role))
def test_a_tokens_size_is_what_protobuf_encodes(record: TokenRecord, role: Role) -> None:
    encoded = broker_pb2.ListTokensResponse()
    token_info_to_proto(record, role, encoded.tokens.add())

    assert SIZES.token(record, role) == encoded.ByteSize()


VAULTS = [
    Vault("v", "t", frozenset({"p"})),
    Vault("v" * 64, "t" * 64, frozenset(f"{n:064}" for n in range(3))),
    Vault("acme-shared", "acme", frozenset(f"member-{n}" for n in range(200))),  # a message past 127 bytes
]


@pytest.mark.parametrize("vault", VAULTS, ids=range(len(VAULTS)))
def test_a_vaults_size_is_what_protobuf_encodes(vault: Vault) -> None:
    encoded = vault_pb2.ListVaultsResponse()
    vault_to_proto(vault, encoded.vaults.add())

    assert SIZES.vault(vault) == encoded.ByteSize()
