"""What the elements of a page take in their answer's binary encoding, computed from the lengths
of their values.

The page cut (domain/paging.py) asks it of every element it considers; building each
element's message, or encoding it, to measure it would cost about what the answer itself
costs, and the answer is encoded once more when it is sent. The arithmetic mirrors the
messages of vault.proto and broker.proto as convert.py fills them: proto3 leaves out a field
at its default value; a string, bytes or message field takes its tag, its length as a varint
and its bytes; a number its tag and its varint (10 bytes when negative); every field number
here is below 16, so every tag is one byte. Each size is exact but for a tombstone's
`purge_time`, counted at its most (the retention is the server's setting, unknown here).

tests/unit/test_sizes.py holds these to ByteSize() of what convert.py builds, with every
field filled and every field empty: a field added to those messages, or one numbered 16 or
more, fails it until it is counted here.
"""

from __future__ import annotations

from zkplatform.domain.models import Item, ItemChange, Role, TokenRecord, Vault

_TAG = 1  # every field number below is at most 15
_MAX_VARINT = 10
_ENUM = _TAG + 1  # an enum field whose value is from 1 to 127: never its default, 0


def _varint(value: int) -> int:
    """The bytes of a varint: 7 bits each; a negative int32 or int64 takes ten."""
    if value < 0:
        return _MAX_VARINT
    return max(1, (value.bit_length() + 6) // 7)


def _text(value: str) -> int:
    """A string field: nothing when empty, else its tag, its length and its UTF-8 bytes."""
    if not value:
        return 0
    # isascii() is O(1) in CPython, and ids, base64url and algorithm names are ASCII: no copy.
    length = len(value) if value.isascii() else len(value.encode())
    return _TAG + _varint(length) + length


def _number(value: int) -> int:
    """An integer, enum or bool field: nothing when 0 (false), else its tag and its varint."""
    return 0 if value == 0 else _TAG + _varint(value)


def _nested(length: int) -> int:
    """A message field that is set (or an element of a repeated one) whose message takes `length`."""
    return _TAG + _varint(length) + length


def _timestamp(seconds: int) -> int:
    """A google.protobuf.Timestamp field that is set, with whole seconds (nanos 0)."""
    return _nested(_number(seconds))


# A tombstone's purge_time at its most: a Timestamp of a seconds varint of any length.
PURGE_TIME_MAX = _nested(_TAG + _MAX_VARINT)


def item_size(item: Item) -> int:
    """The bytes of a platform.v1.Item as convert.item_to_proto fills it."""
    size = (
        _text(item.item_id)
        + _text(item.tenant_id)
        + _text(item.vault_id)
        + _number(item.version)
        + _text(item.kind)
        + _text(item.title_hash)
        + _timestamp(item.updated_at)  # always set
        + _number(item.deleted)
    )
    if (payload := item.payload) is not None:  # set, even were its fields all empty
        size += _nested(
            _text(payload.alg)
            + _text(payload.nonce)
            + _text(payload.aad)
            + _text(payload.ciphertext)
            + _number(payload.version)
            + _text(payload.commitment)
            + _text(payload.signer)
            + _text(payload.signature)
        )
    for key in item.wrapped_keys:
        size += _nested(_text(key.recipient_id) + _text(key.wrap_alg) + _text(key.wrapped_key))
    if item.deleted:
        size += PURGE_TIME_MAX
    return size


def token_info_size(record: TokenRecord) -> int:
    """The bytes of a platform.v1.TokenInfo as convert.token_info_to_proto fills it."""
    size = (
        _text(record.token_id)
        + _text(record.tenant_id)
        + _text(record.principal_id)
        + sum(_text(scope) for scope in record.scopes)
        + _ENUM  # role: every Role is a value from 1 to 4
        + _text(record.pop_key_id)
        + _timestamp(record.issued_at)
        + _timestamp(record.expires_at)
        + _text(record.parent_token_id)
        + _ENUM  # origin: operator (1) or minted (2)
    )
    if record.last_used_at is not None:
        size += _timestamp(record.last_used_at)
    return size


def vault_size(vault: Vault) -> int:
    """The bytes of a platform.v1.Vault as convert.vault_to_proto fills it."""
    return _text(vault.vault_id) + _text(vault.tenant_id) + sum(_text(member) for member in vault.members)


class EncodedSizes:
    """domain.paging.ElementSizes: each element as an entry of its answer's repeated field
    (ListItemsResponse.items, ListChangesResponse.changes and WatchChangesResponse.changes,
    ListTokensResponse.tokens, ListVaultsResponse.vaults), its tag and length prefix included."""

    def item(self, item: Item) -> int:
        return _nested(item_size(item))

    def change(self, change: ItemChange) -> int:
        # ItemChange {item = 1, sequence = 2}
        return _nested(_nested(item_size(change.item)) + _number(change.sequence))

    def token(self, record: TokenRecord, role: Role) -> int:
        return _nested(token_info_size(record))  # its role is an enum value like any other

    def vault(self, vault: Vault) -> int:
        return _nested(vault_size(vault))
