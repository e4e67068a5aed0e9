"""How domain values are laid out in SQL rows, shared by the SQL stores."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from itertools import islice
from typing import Any

from zkplatform.domain.audit import AuditRecord, Head, UnreadableRecord
from zkplatform.domain.models import (
    EncryptedPayload,
    Item,
    ItemChange,
    Principal,
    Role,
    Scope,
    TokenRecord,
    Vault,
    WrappedKey,
)
from zkplatform.domain.request_ids import A, Answer, Repeated, RequestId, Reused

ITEM_COLUMNS = (
    "vault_id, item_id, tenant_id, version, kind, title_hash, updated_at, payload, wrapped_keys, deleted, sequence"
)
TOKEN_COLUMNS = (
    "secret_hash, token_id, tenant_id, principal_id, scopes, issued_at, expires_at, pop_key_id, minted, revoked,"  # noqa: S105 # column names
    " parent_token_id, last_used_at"
)

# What a call made with a request id answered: an item's change in the columns of `items`, or
# token ids (space-separated, '' for none); the others NULL.
ANSWER_COLUMNS = ITEM_COLUMNS + ", token_ids"


# Items an add_items holds in memory at a time, and inserts with one statement: an import
# of any length costs one chunk of memory, and a long one a statement a chunk, not one a row.
ADD_ITEMS_CHUNK = 1_000

PRINCIPAL_COLUMNS = "principal_id, tenant_id, role, allowed_scopes, disabled"
# A token and its principal, found by the token's HMAC or its id (`{}`: which column of
# tokens t is compared with the driver's placeholder).
TOKEN_WITH_PRINCIPAL = (
    "SELECT "
    + ", ".join(f"t.{c}" for c in TOKEN_COLUMNS.split(", "))
    + ", "
    + ", ".join(f"p.{c}" for c in PRINCIPAL_COLUMNS.split(", "))
    + " FROM tokens t JOIN principals p ON p.principal_id = t.principal_id WHERE t.{} = ?"
)


_TOKEN_WIDTH = len(TOKEN_COLUMNS.split(", "))
_ITEM_WIDTH = len(ITEM_COLUMNS.split(", "))


def token_with_principal_from_row(row: tuple[Any, ...] | Any) -> tuple[TokenRecord, Principal]:
    return token_from_row(row[:_TOKEN_WIDTH]), principal_from_row(row[_TOKEN_WIDTH:])


def scopes_to_text(scopes: Iterable[Scope]) -> str:
    return " ".join(sorted(scopes))


def scopes_from_text(text: str) -> frozenset[Scope]:
    return frozenset(Scope(s) for s in text.split())


def payload_to_text(payload: EncryptedPayload | None) -> str | None:
    if payload is None:
        return None
    document: dict[str, str | int] = {
        "alg": payload.alg,
        "nonce": payload.nonce,
        "aad": payload.aad,
        "ciphertext": payload.ciphertext,
        "version": payload.version,
    }
    # Sealing version 2's fields, only when set: a version 1 payload is stored as it always was.
    for name in ("commitment", "signer", "signature"):
        if value := getattr(payload, name):
            document[name] = value
    return json.dumps(document, separators=(",", ":"))


def keys_to_text(keys: Iterable[WrappedKey]) -> str:
    return json.dumps([[k.recipient_id, k.wrap_alg, k.wrapped_key] for k in keys], separators=(",", ":"))


def item_params(item: Item, sequence: int) -> tuple[Any, ...]:
    return (
        item.vault_id,
        item.item_id,
        item.tenant_id,
        item.version,
        item.kind,
        item.title_hash,
        item.updated_at,
        payload_to_text(item.payload),
        keys_to_text(item.wrapped_keys),
        item.deleted,
        sequence,
    )


def chunks(items: Iterable[Item], size: int = ADD_ITEMS_CHUNK) -> Iterator[list[Item]]:
    """The items, consumed once, in lists of at most `size`."""
    iterator = iter(items)
    while chunk := list(islice(iterator, size)):
        yield chunk


def until_unknown_vault(chunk: list[Item], known: Collection[tuple[str, str]]) -> tuple[list[Item], Item | None]:
    """The items before the first whose (vault, tenant) is not known, and that item (None when
    there is none). The items before it are still inserted, so that a duplicate among them is
    the error: every store names the first item, in the order given, that cannot be added."""
    for index, item in enumerate(chunk):
        if (item.vault_id, item.tenant_id) not in known:
            return chunk[:index], item
    return chunk, None


def unknown_vault(item: Item) -> str:
    return f"no vault {item.vault_id} in tenant {item.tenant_id}"


def per_vault(items: Iterable[Item]) -> Counter[str]:
    """How many sequence numbers each vault takes for these items."""
    return Counter(item.vault_id for item in items)


def numbered_items(items: Sequence[Item], first_sequence: Mapping[str, int]) -> list[tuple[Any, ...]]:
    """Insert parameters for items whose vaults took sequence numbers from
    first_sequence[vault] on: the items of a vault take them in the order given."""
    following = dict(first_sequence)
    params = []
    for item in items:
        params.append(item_params(item, following[item.vault_id]))
        following[item.vault_id] += 1
    return params


def first_duplicate(items: Sequence[Item], exists: Callable[[Item], bool]) -> str:
    """What an AlreadyExists for this batch names: its first item seen twice or already stored."""
    seen: set[tuple[str, str]] = set()
    for item in items:
        key = (item.vault_id, item.item_id)
        if key in seen or exists(item):
            return f"item {item.item_id} in vault {item.vault_id}"
        seen.add(key)
    return "an item"


def item_from_row(row: tuple[Any, ...] | Any) -> tuple[Item, int]:
    """(item, sequence) from a row in ITEM_COLUMNS order."""
    vault_id, item_id, tenant_id, version, kind, title_hash, updated_at, payload, keys, deleted, sequence = row
    item = Item(
        item_id=item_id,
        tenant_id=tenant_id,
        vault_id=vault_id,
        version=version,
        kind=kind,
        title_hash=title_hash,
        updated_at=updated_at,
        payload=None if payload is None else EncryptedPayload(**json.loads(payload)),
        wrapped_keys=tuple(WrappedKey(*key) for key in json.loads(keys)),
        deleted=bool(deleted),
    )
    return item, sequence


def answer_params(answer: Answer) -> tuple[Any, ...]:
    """An answer in ANSWER_COLUMNS order."""
    if isinstance(answer, ItemChange):
        return (*item_params(answer.item, answer.sequence), None)
    return (*(None,) * _ITEM_WIDTH, " ".join(answer))


def answer_from_row(row: tuple[Any, ...] | Any) -> Answer:
    """An answer from a row in ANSWER_COLUMNS order."""
    token_ids = row[_ITEM_WIDTH]
    if token_ids is not None:
        return tuple(str(token_ids).split())
    return ItemChange(*item_from_row(row[:_ITEM_WIDTH]))


def repeat_of(row: tuple[Any, ...] | Any, request: RequestId, kind: type[A]) -> Repeated[A] | Reused:
    """What a record found of the request id (a row of fingerprint and ANSWER_COLUMNS) says of
    this call: a repeat of the call it recorded, or the id reused for another request."""
    answer = answer_from_row(row[1:])
    if bytes(row[0]) != request.fingerprint or not isinstance(answer, kind):
        return Reused()
    return Repeated(answer)


def token_params(token: TokenRecord) -> tuple[Any, ...]:
    return (
        token.secret_hash,
        token.token_id,
        token.tenant_id,
        token.principal_id,
        scopes_to_text(token.scopes),
        token.issued_at,
        token.expires_at,
        token.pop_key_id,
        token.minted,
        token.revoked,
        token.parent_token_id,
        token.last_used_at,
    )


def token_from_row(row: tuple[Any, ...] | Any) -> TokenRecord:
    (
        secret_hash,
        token_id,
        tenant_id,
        principal_id,
        scopes,
        issued_at,
        expires_at,
        pop_key_id,
        minted,
        revoked,
        parent_token_id,
        last_used_at,
    ) = row
    return TokenRecord(
        token_id=token_id,
        secret_hash=bytes(secret_hash),
        tenant_id=tenant_id,
        principal_id=principal_id,
        scopes=scopes_from_text(scopes),
        issued_at=issued_at,
        expires_at=expires_at,
        pop_key_id=pop_key_id,
        minted=bool(minted),
        revoked=bool(revoked),
        parent_token_id=parent_token_id,
        last_used_at=last_used_at,
    )


def listing_params(
    tenant_id: str, principal_id: str | None, live_at: int | None, after: tuple[int, str] | None, limit: int
) -> tuple[Any, ...]:
    """The parameters of statements.token_listing, in its order."""
    params: list[Any] = [tenant_id]
    if principal_id is not None:
        params.append(principal_id)
    if live_at is not None:
        params.append(live_at)
    if after is not None:
        params.extend(after)
    params.append(limit)
    return tuple(params)


def vaults(tenant_id: str, vault_ids: Sequence[str], members: Iterable[tuple[str, str]]) -> list[Vault]:
    """The tenant's vaults, in the order given, from (vault_id, principal_id) membership rows."""
    by_vault: dict[str, set[str]] = {vault_id: set() for vault_id in vault_ids}
    for vault_id, principal_id in members:
        if vault_id in by_vault:
            by_vault[vault_id].add(principal_id)
    return [Vault(vault_id, tenant_id, frozenset(by_vault[vault_id])) for vault_id in vault_ids]


def member_vaults(found: Iterable[tuple[str, str, str]]) -> list[Vault]:
    """Vaults from (vault_id, tenant_id, principal_id) rows, a row a member, a vault's rows together."""
    by_vault: dict[str, tuple[str, set[str]]] = {}
    for vault_id, tenant_id, principal_id in found:
        by_vault.setdefault(vault_id, (tenant_id, set()))[1].add(principal_id)
    return [Vault(vault_id, tenant_id, frozenset(members)) for vault_id, (tenant_id, members) in by_vault.items()]


def principal_from_row(row: tuple[Any, ...] | Any) -> Principal:
    principal_id, tenant_id, role, allowed, disabled = row
    return Principal(principal_id, tenant_id, Role(role), scopes_from_text(allowed), disabled=bool(disabled))


def audit_record_params(record: AuditRecord) -> tuple[Any, ...]:
    return (record.tenant_id, record.sequence, record.event, record.hash)


def audit_record_from_row(row: tuple[Any, ...] | Any) -> AuditRecord:
    """The record, its columns' types checked (SQLite keeps whatever a column is given): a
    value of another type is named as an unreadable event, never converted or a TypeError."""
    tenant_id, sequence = row[0], row[1]
    what = f"event {sequence}"
    return AuditRecord(
        str(tenant_id),
        _stored_integer(sequence, tenant_id, what),
        _stored_bytes(row[2], tenant_id, what, "event"),
        _stored_bytes(row[3], tenant_id, what, "hash"),
    )


def audit_head_from_row(row: tuple[Any, ...] | Any, tenant_id: str) -> Head | None:
    if row is None:
        return None
    what = "the chain's head"
    return Head(tenant_id, _stored_integer(row[0], tenant_id, what), _stored_bytes(row[1], tenant_id, what, "hash"))


def _stored_integer(value: object, tenant_id: object, what: str) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise UnreadableRecord(tenant_id, what, "sequence", value, "an integer")


def _stored_bytes(value: object, tenant_id: object, what: str, column: str) -> bytes:
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    raise UnreadableRecord(tenant_id, what, column, value, "bytes")
