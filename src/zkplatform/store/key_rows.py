"""The key log in SQL (migrations sqlite/0009, postgresql/0010): the statements both SQL stores
run, written once with `?` placeholders and rendered per dialect, and the rows' layout."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, fields
from typing import Any

from zkplatform.domain.key_log import AddDevice, Cosignature, Device, Leaf, UnreadableKeyLog

DEVICE_COLUMNS = (
    "tenant_id, principal_id, device_id, signing_jwk, agreement_key_id, agreement_jwk, endorser, created_at,"
    " log_index, revoked_at, revoked_index"
)
COSIGNATURE_COLUMNS = "tenant_id, size, witness, cosigned_at, line"
_DEVICE_ORDER = "ORDER BY principal_id, log_index"


@dataclass(frozen=True, slots=True)
class KeyLogStatements:
    size: str = "SELECT size FROM key_log_heads WHERE tenant_id = ?"
    # The head's row before the tenant's first entry, so that the compare-and-set has a row to
    # lock and move (only an append at size 0 needs it: without a row the log is empty).
    new_head: str = "INSERT INTO key_log_heads (tenant_id, size) VALUES (?, 0) ON CONFLICT (tenant_id) DO NOTHING"
    # The compare-and-set: (tenant, expected size) -> the new size; no row when the size moved.
    # PostgreSQL: the UPDATE locks the row (as SELECT ... FOR UPDATE would) until the commit, and
    # a concurrent one waits for that commit, then re-checks `size = ?` on the row as committed
    # (READ COMMITTED), finds it moved and changes nothing.
    move_head: str = "UPDATE key_log_heads SET size = size + 1 WHERE tenant_id = ? AND size = ? RETURNING size"
    add_entry: str = "INSERT INTO key_log_entries (tenant_id, idx, data, leaf_hash) VALUES (?, ?, ?, ?)"
    leaves: str = (
        "SELECT idx, data, leaf_hash FROM key_log_entries"
        " WHERE tenant_id = ? AND idx >= ? AND idx < ? ORDER BY idx LIMIT ?"
    )
    hashes: str = "SELECT leaf_hash FROM key_log_entries WHERE tenant_id = ? AND idx < ? ORDER BY idx"
    tenants: str = "SELECT tenant_id FROM key_log_heads WHERE size > 0 ORDER BY tenant_id"
    principal_in_tenant: str = "SELECT 1 FROM principals WHERE principal_id = ? AND tenant_id = ?"
    add_device: str = f"INSERT INTO devices ({DEVICE_COLUMNS}) VALUES ({', '.join('?' * 11)})"
    # (at, index, tenant, principal, device): a device of the principal, only while it is live.
    revoke_device: str = (
        "UPDATE devices SET revoked_at = ?, revoked_index = ?"
        " WHERE tenant_id = ? AND principal_id = ? AND device_id = ? AND revoked_index IS NULL"
    )
    tenant_devices: str = f"SELECT {DEVICE_COLUMNS} FROM devices WHERE tenant_id = ? {_DEVICE_ORDER}"
    principal_devices: str = (
        f"SELECT {DEVICE_COLUMNS} FROM devices WHERE tenant_id = ? AND principal_id = ? {_DEVICE_ORDER}"
    )
    # (tenant, key id, tenant, key id): the primary key's lookup, then the unique index's (a
    # UNION, where an OR of the two would scan the tenant's devices on SQLite).
    find_device: str = (
        f"SELECT {DEVICE_COLUMNS} FROM devices WHERE tenant_id = ? AND device_id = ?"
        f" UNION ALL SELECT {DEVICE_COLUMNS} FROM devices WHERE tenant_id = ? AND agreement_key_id = ? LIMIT 1"
    )
    # (tenant, each principal from the page's on, after principal, after index, size, size,
    # limit): a keyset page, each principal's devices a range of the devices_by_principal index
    # (a row-value comparison with the page's start would scan every principal's after it). Its
    # IN list is filled in per call.
    live_devices: str = (
        f"SELECT {DEVICE_COLUMNS} FROM devices WHERE tenant_id = ? AND principal_id IN ({{principals}})"
        " AND (principal_id <> ? OR log_index > ?) AND log_index < ? AND (revoked_index IS NULL OR revoked_index >= ?)"
        f" {_DEVICE_ORDER} LIMIT ?"
    )
    # A newer time replaces the witness's cosignature of that size; an older or equal one changes nothing.
    save_cosignature: str = (
        f"INSERT INTO witness_cosignatures ({COSIGNATURE_COLUMNS}) VALUES (?, ?, ?, ?, ?)"
        " ON CONFLICT (tenant_id, size, witness) DO UPDATE SET cosigned_at = excluded.cosigned_at, line = excluded.line"
        " WHERE excluded.cosigned_at > witness_cosignatures.cosigned_at"
    )
    # (tenant, each witness, tenant, each witness, quorum): the cosignatures of the named
    # witnesses of the newest size that at least `quorum` of them cosigned; no row when none has.
    # The primary key read backwards, group by group, stopping at the first with a quorum: the
    # older sizes' cosignatures, which are kept, cost it nothing (PostgreSQL: Limit over a
    # GroupAggregate over an Index Only Scan Backward; SQLite: no temporary B-tree).
    quorum_cosignatures: str = (
        "SELECT size, witness, cosigned_at, line FROM witness_cosignatures"
        " WHERE tenant_id = ? AND witness IN ({witnesses}) AND size ="
        " (SELECT size FROM witness_cosignatures WHERE tenant_id = ? AND witness IN ({witnesses})"
        " GROUP BY size HAVING count(*) >= ? ORDER BY size DESC LIMIT 1)"
        " ORDER BY witness"
    )
    # (tenant, tenant, each witness): the log's size, with each named witness's cosignature of it
    # (one row of the size and NULLs when there is none).
    current_cosignatures: str = (
        "SELECT h.size, c.witness, c.cosigned_at, c.line"
        " FROM (SELECT coalesce((SELECT size FROM key_log_heads WHERE tenant_id = ?), 0) AS size) AS h"
        " LEFT JOIN witness_cosignatures AS c ON c.tenant_id = ? AND c.size = h.size"
        " AND c.witness IN ({witnesses}) ORDER BY c.witness"
    )
    witness_sizes: str = "SELECT witness, max(size) FROM witness_cosignatures WHERE tenant_id = ? GROUP BY witness"

    def live_devices_of(self, count: int, placeholder: str) -> str:
        return self.live_devices.format(principals=_among(count, placeholder))

    def quorum_cosignatures_of(self, count: int, placeholder: str) -> str:
        return self.quorum_cosignatures.format(witnesses=_among(count, placeholder))

    def current_cosignatures_of(self, count: int, placeholder: str) -> str:
        return self.current_cosignatures.format(witnesses=_among(count, placeholder))


def _among(count: int, placeholder: str) -> str:
    """An IN list of `count` parameters; of none, NULL, which no value is IN."""
    return ", ".join([placeholder] * count) or "NULL"


SQLITE = KeyLogStatements()
# psycopg's placeholder; none of these texts holds a `?` or a `%` of its own.
POSTGRESQL = KeyLogStatements(**{f.name: getattr(SQLITE, f.name).replace("?", "%s") for f in fields(KeyLogStatements)})


def device_params(tenant_id: str, index: int, added: AddDevice) -> tuple[object, ...]:
    """The row of a device an entry of the tenant's log at `index` adds."""
    d = added.device
    return (
        tenant_id,
        d.principal_id,
        d.device_id,
        d.signing_jwk,
        d.agreement_key_id,
        d.agreement_jwk,
        d.endorser,
        d.created_at,
        index,
        None,
        None,
    )


_TEXT_COLUMNS = ("principal_id", "device_id", "signing_jwk", "agreement_key_id", "agreement_jwk", "endorser")


def device_from_row(row: tuple[Any, ...] | Any) -> Device:
    """The device of a row whose text is UTF-8 (SQLite keeps whatever bytes a text is given: the
    SQLite store reads them escaped, for this to name); UnreadableKeyLog otherwise."""
    tenant_id, *texts, created_at, log_index, revoked_at, revoked_index = row
    for column, value in zip(_TEXT_COLUMNS, texts, strict=True):
        try:
            str(value).encode()
        except UnicodeEncodeError:
            raise UnreadableKeyLog(
                str(tenant_id), f"the device of key log entry {log_index}", f"its {column} is not UTF-8 text"
            ) from None
    principal_id, device_id, signing_jwk, agreement_key_id, agreement_jwk, endorser = map(str, texts)
    return Device(
        tenant_id=str(tenant_id),
        principal_id=principal_id,
        device_id=device_id,
        signing_jwk=signing_jwk,
        agreement_key_id=agreement_key_id,
        agreement_jwk=agreement_jwk,
        endorser=endorser,
        created_at=int(created_at),
        log_index=int(log_index),
        revoked_at=None if revoked_at is None else int(revoked_at),
        revoked_index=None if revoked_index is None else int(revoked_index),
    )


def live_devices_params(
    tenant_id: str, principal_ids: Iterable[str], size: int, after: tuple[str, int] | None, limit: int
) -> tuple[list[str], tuple[object, ...]]:
    """The principals live_devices names in its IN list (sorted, from the page's on), and its parameters."""
    start, index = after or ("", -1)
    wanted = sorted({p for p in principal_ids if p >= start})
    return wanted, (tenant_id, *wanted, start, index, size, size, limit)


def taken(tenant_id: str, key_id: str) -> str:
    """What AlreadyExists says of a new device whose key id names a device of the tenant already."""
    return f"key {key_id} is already a device's in tenant {tenant_id}"


def leaf_from_row(tenant_id: str, row: tuple[Any, ...] | Any) -> Leaf:
    """The entry of a row, whose data is UTF-8 text as every entry is (canonical JSON, answered as
    a string); UnreadableKeyLog otherwise."""
    index, data, hash_ = row
    try:
        bytes(data).decode()
    except UnicodeDecodeError:
        raise UnreadableKeyLog(tenant_id, f"key log entry {index}", "its data is not UTF-8 text") from None
    return Leaf(int(index), bytes(data), bytes(hash_))


def cosignature_params(cosignature: Cosignature) -> tuple[object, ...]:
    c = cosignature
    return c.tenant_id, c.size, c.witness, c.cosigned_at, c.line


def served(tenant_id: str, found: list[tuple[Any, ...]] | list[Any]) -> tuple[int, list[Cosignature]]:
    """What served_checkpoint answers of the rows (size, witness, cosigned_at, line) of one size,
    whose witness is NULL in a row that stands for the size alone; (0, []) for no row."""
    if not found:
        return 0, []
    size = int(found[0][0])
    return size, [Cosignature(tenant_id, size, str(w), int(at), str(line)) for _, w, at, line in found if w is not None]
