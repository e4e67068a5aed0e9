"""The SQLite store's key logs, their devices and their witnesses' cosignatures."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable

from zkplatform.domain.audit import Action, Actor
from zkplatform.domain.key_log import AddDevice, Cosignature, Device, Leaf, LogChange
from zkplatform.domain.ports.refusals import AlreadyExists
from zkplatform.domain.request_ids import Repeated, RequestId, Reused
from zkplatform.store import key_rows
from zkplatform.store.key_rows import SQLITE as KEYS
from zkplatform.store.sqlite.database import Database, _as_stored, _earlier, _record, _remember, _require
from zkplatform_tlog.merkle import leaf_hash


class SQLiteKeyLog(Database):
    async def key_log_size(self, tenant_id: str) -> int:
        row = self._lookup(lambda c: c.execute(KEYS.size, (tenant_id,)).fetchone())
        return 0 if row is None else int(row[0])

    async def devices(self, tenant_id: str, principal_id: str | None = None) -> list[Device]:
        query, params = (
            (KEYS.tenant_devices, (tenant_id,))
            if principal_id is None
            else (KEYS.principal_devices, (tenant_id, principal_id))
        )
        found = await self._read(_as_stored(lambda c: c.execute(query, params).fetchall()))
        return [key_rows.device_from_row(row) for row in found]

    async def find_device_key(self, tenant_id: str, key_id: str) -> Device | None:
        params = (tenant_id, key_id, tenant_id, key_id)
        row = self._lookup(_as_stored(lambda c: c.execute(KEYS.find_device, params).fetchone()))
        return None if row is None else key_rows.device_from_row(row)

    async def append_key_log(  # noqa: PLR0913 # the entry, its change and event, and the request id naming it
        self,
        tenant_id: str,
        expected_size: int,
        entry: bytes,
        *,
        change: LogChange,
        event: tuple[Action, dict[str, str]],
        actor: Actor,
        request: RequestId | None = None,
    ) -> int | Repeated[tuple[str, ...]] | Reused | None:
        def append(conn: sqlite3.Connection) -> int | Repeated[tuple[str, ...]] | Reused | None:
            # The writer holds the file's write lock from BEGIN IMMEDIATE on: no other append of
            # any tenant, in this process or another, comes between the compare and the set.
            if (earlier := _earlier(conn, actor, request, tuple)) is not None:
                return earlier
            if expected_size == 0:
                conn.execute(KEYS.new_head, (tenant_id,))
            if conn.execute(KEYS.move_head, (tenant_id, expected_size)).fetchone() is None:
                return None
            conn.execute(KEYS.add_entry, (tenant_id, expected_size, entry, leaf_hash(entry)))
            if isinstance(change, AddDevice):
                _add_device(conn, tenant_id, expected_size, change)
            else:
                revoked = (change.at, expected_size, tenant_id, change.principal_id)
                conn.executemany(KEYS.revoke_device, [(*revoked, device_id) for device_id in change.device_ids])
            action, details = event
            _record(conn, [actor.event(tenant_id, action, **details)])
            _remember(conn, actor, request, (str(expected_size),))
            return expected_size + 1

        return await self._write(append)

    async def key_log_leaves(self, tenant_id: str, start: int, limit: int, size: int) -> list[Leaf]:
        found = await self._read(lambda c: c.execute(KEYS.leaves, (tenant_id, start, size, limit)).fetchall())
        return [key_rows.leaf_from_row(tenant_id, row) for row in found]

    async def key_log_hashes(self, tenant_id: str, size: int) -> list[bytes]:
        found = await self._read(lambda c: c.execute(KEYS.hashes, (tenant_id, size)).fetchall())
        return [bytes(row[0]) for row in found]

    async def live_devices(
        self, tenant_id: str, principal_ids: Iterable[str], size: int, after: tuple[str, int] | None, limit: int
    ) -> list[Device]:
        wanted, params = key_rows.live_devices_params(tenant_id, principal_ids, size, after, limit)
        query = KEYS.live_devices_of(len(wanted), "?")
        found = await self._read(_as_stored(lambda c: c.execute(query, params).fetchall()))
        return [key_rows.device_from_row(row) for row in found]

    async def key_log_tenants(self) -> list[str]:
        found = await self._read(lambda c: c.execute(KEYS.tenants).fetchall())
        return [str(row[0]) for row in found]

    async def save_cosignature(self, cosignature: Cosignature) -> None:
        await self._write(lambda c: c.execute(KEYS.save_cosignature, key_rows.cosignature_params(cosignature)))

    async def served_checkpoint(
        self, tenant_id: str, witnesses: Iterable[str], quorum: int
    ) -> tuple[int, list[Cosignature]]:
        named = sorted(set(witnesses))
        params: tuple[object, ...]
        if quorum <= 0:
            query, params = KEYS.current_cosignatures_of(len(named), "?"), (tenant_id, tenant_id, *named)
        else:
            query, params = KEYS.quorum_cosignatures_of(len(named), "?"), (tenant_id, *named, tenant_id, *named, quorum)
        found = await self._read(lambda c: c.execute(query, params).fetchall())
        return key_rows.served(tenant_id, found)

    async def witness_sizes(self, tenant_id: str) -> dict[str, int]:
        found = await self._read(lambda c: c.execute(KEYS.witness_sizes, (tenant_id,)).fetchall())
        return {str(witness): int(size) for witness, size in found}


def _add_device(conn: sqlite3.Connection, tenant_id: str, index: int, added: AddDevice) -> None:
    """Store the device an entry of the tenant's log at `index` adds; UnknownReference when its
    principal is not of the tenant, AlreadyExists when either of its key ids names a device."""
    principal_id = added.device.principal_id
    _require(
        conn, KEYS.principal_in_tenant, (principal_id, tenant_id), f"no principal {principal_id} in tenant {tenant_id}"
    )
    for key_id in (added.device.device_id, added.device.agreement_key_id):
        if conn.execute(KEYS.find_device, (tenant_id, key_id, tenant_id, key_id)).fetchone() is not None:
            raise AlreadyExists(key_rows.taken(tenant_id, key_id))
    conn.execute(KEYS.add_device, key_rows.device_params(tenant_id, index, added))
