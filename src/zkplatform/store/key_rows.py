"""The key directory in SQL (migrations sqlite/0008, postgresql/0009): the statements both SQL
stores run, written once with `?` placeholders and rendered per dialect, and the rows' layout."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from zkplatform.domain.key_log import EMPTY, KeyLogHead, KeyLogRecord
from zkplatform.domain.recipient_keys import RecipientKey

KEY_COLUMNS = "tenant_id, key_id, principal_id, jwk, created_at, revoked_at"
_ORDER = "ORDER BY principal_id, created_at, key_id"


@dataclass(frozen=True, slots=True)
class KeyStatements:
    principal_in_tenant: str = "SELECT 1 FROM principals WHERE principal_id = ? AND tenant_id = ?"
    add_key: str = f"INSERT INTO recipient_keys ({KEY_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)"
    get_key: str = f"SELECT {KEY_COLUMNS} FROM recipient_keys WHERE tenant_id = ? AND key_id = ?"
    find_keys: str = f"SELECT {KEY_COLUMNS} FROM recipient_keys WHERE key_id = ? ORDER BY tenant_id"
    revoke_key: str = (
        "UPDATE recipient_keys SET revoked_at = ? WHERE tenant_id = ? AND key_id = ? AND revoked_at IS NULL"
    )
    tenant_keys: str = f"SELECT {KEY_COLUMNS} FROM recipient_keys WHERE tenant_id = ? {_ORDER}"
    principal_keys: str = f"SELECT {KEY_COLUMNS} FROM recipient_keys WHERE tenant_id = ? AND principal_id = ? {_ORDER}"
    # The live keys of some principals: (tenant, then each principal id); its IN list is filled in per call.
    live_keys: str = (
        f"SELECT {KEY_COLUMNS} FROM recipient_keys"
        " WHERE tenant_id = ? AND revoked_at IS NULL AND principal_id IN ({principals}) " + _ORDER
    )
    head: str = "SELECT size, hash FROM key_log_heads WHERE tenant_id = ?"
    set_head: str = (
        "INSERT INTO key_log_heads (tenant_id, size, hash) VALUES (?, ?, ?)"
        " ON CONFLICT (tenant_id) DO UPDATE SET size = excluded.size, hash = excluded.hash"
    )
    add_entry: str = "INSERT INTO key_log (tenant_id, log_index, entry, hash) VALUES (?, ?, ?, ?)"
    entries: str = (
        "SELECT tenant_id, log_index, entry, hash FROM key_log"
        " WHERE tenant_id = ? AND log_index > ? ORDER BY log_index LIMIT ?"
    )

    def live_keys_of(self, count: int, placeholder: str) -> str:
        return self.live_keys.format(principals=", ".join([placeholder] * count))


SQLITE = KeyStatements()
# psycopg's placeholder; none of these texts holds a `?` or a `%` of its own.
POSTGRESQL = KeyStatements(**{f.name: getattr(SQLITE, f.name).replace("?", "%s") for f in fields(KeyStatements)})


def key_params(key: RecipientKey) -> tuple[object, ...]:
    return key.tenant_id, key.key_id, key.principal_id, key.jwk, key.created_at, key.revoked_at


def key_from_row(row: tuple[Any, ...] | Any) -> RecipientKey:
    tenant_id, key_id, principal_id, jwk, created_at, revoked_at = row
    return RecipientKey(
        key_id=str(key_id),
        tenant_id=str(tenant_id),
        principal_id=str(principal_id),
        jwk=str(jwk),
        created_at=int(created_at),
        revoked_at=None if revoked_at is None else int(revoked_at),
    )


def head_from_row(row: tuple[Any, ...] | Any | None) -> KeyLogHead:
    """The head as stored; the empty log's before a tenant's first change."""
    return EMPTY if row is None else KeyLogHead(int(row[0]), bytes(row[1]))


def record_from_row(row: tuple[Any, ...] | Any) -> KeyLogRecord:
    tenant_id, index, entry, hash_ = row
    return KeyLogRecord(str(tenant_id), int(index), bytes(entry), bytes(hash_))


def record_params(record: KeyLogRecord) -> tuple[object, ...]:
    return record.tenant_id, record.index, record.data, record.hash
