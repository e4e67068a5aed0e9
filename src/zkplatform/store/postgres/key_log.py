"""The PostgreSQL store's key logs, their devices and their witnesses' cosignatures."""

from __future__ import annotations

from collections.abc import Iterable

from zkplatform.domain.audit import Action, Actor
from zkplatform.domain.key_log import AddDevice, Cosignature, Device, Leaf, LogChange
from zkplatform.domain.ports.refusals import AlreadyExists
from zkplatform.domain.request_ids import Repeated, RequestId, Reused
from zkplatform.store import key_rows
from zkplatform.store.key_rows import POSTGRESQL as KEYS
from zkplatform.store.postgres.connection import Conn
from zkplatform.store.postgres.database import Database, _claim, _fetchone, _insert, _record, _require, _settle
from zkplatform_tlog.merkle import leaf_hash


class PostgresKeyLog(Database):
    async def key_log_size(self, tenant_id: str) -> int:
        row = await self._one(KEYS.size, (tenant_id,))
        return 0 if row is None else int(row[0])

    async def devices(self, tenant_id: str, principal_id: str | None = None) -> list[Device]:
        if principal_id is None:
            found = await self._all(KEYS.tenant_devices, (tenant_id,))
        else:
            found = await self._all(KEYS.principal_devices, (tenant_id, principal_id))
        return [key_rows.device_from_row(row) for row in found]

    async def find_device_key(self, tenant_id: str, key_id: str) -> Device | None:
        row = await self._one(KEYS.find_device, (tenant_id, key_id, tenant_id, key_id))
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
        async def append(conn: Conn) -> int | Repeated[tuple[str, ...]] | Reused | None:
            # The request id's claim is the transaction's first lock, as on every write (then the
            # key log's head, then the audit trail's): a concurrent call with the id waits.
            if request is not None and (earlier := await _claim(conn, actor, request, tuple)) is not None:
                return earlier
            if expected_size == 0:
                await conn.execute(KEYS.new_head, (tenant_id,))
            # The compare-and-set, which locks the head's row until the commit: appends of the
            # tenant queue there, whichever worker or host makes them, and each statement below
            # sees what the appends before this one committed.
            if await _fetchone(conn, KEYS.move_head, (tenant_id, expected_size)) is None:
                if request is not None:
                    await _settle(conn, actor, request, None)
                return None
            await conn.execute(KEYS.add_entry, (tenant_id, expected_size, entry, leaf_hash(entry)))
            if isinstance(change, AddDevice):
                await _add_device(conn, tenant_id, expected_size, change)
            else:
                revoked = (change.at, expected_size, tenant_id, change.principal_id)
                async with conn.cursor() as cursor:
                    await cursor.executemany(KEYS.revoke_device, [(*revoked, d) for d in change.device_ids])
            action, details = event
            await _record(conn, [actor.event(tenant_id, action, **details)])
            if request is not None:
                await _settle(conn, actor, request, (str(expected_size),))
            return expected_size + 1

        return await self._tx(append)

    async def key_log_leaves(self, tenant_id: str, start: int, limit: int, size: int) -> list[Leaf]:
        found = await self._all(KEYS.leaves, (tenant_id, start, size, limit))
        return [key_rows.leaf_from_row(tenant_id, row) for row in found]

    async def key_log_hashes(self, tenant_id: str, size: int) -> list[bytes]:
        return [bytes(row[0]) for row in await self._all(KEYS.hashes, (tenant_id, size))]

    async def live_devices(
        self, tenant_id: str, principal_ids: Iterable[str], size: int, after: tuple[str, int] | None, limit: int
    ) -> list[Device]:
        wanted, params = key_rows.live_devices_params(tenant_id, principal_ids, size, after, limit)
        found = await self._all(KEYS.live_devices_of(len(wanted), "%s"), params)
        return [key_rows.device_from_row(row) for row in found]

    async def key_log_tenants(self) -> list[str]:
        return [str(row[0]) for row in await self._all(KEYS.tenants)]

    async def save_cosignature(self, cosignature: Cosignature) -> None:
        async def save(conn: Conn) -> None:
            await conn.execute(KEYS.save_cosignature, key_rows.cosignature_params(cosignature))

        await self._tx(save)

    async def served_checkpoint(
        self, tenant_id: str, witnesses: Iterable[str], quorum: int
    ) -> tuple[int, list[Cosignature]]:
        named = sorted(set(witnesses))
        params: tuple[object, ...]
        if quorum <= 0:
            query, params = KEYS.current_cosignatures_of(len(named), "%s"), (tenant_id, tenant_id, *named)
        else:
            query, params = (
                KEYS.quorum_cosignatures_of(len(named), "%s"),
                (tenant_id, *named, tenant_id, *named, quorum),
            )
        return key_rows.served(tenant_id, await self._all(query, params))

    async def witness_sizes(self, tenant_id: str) -> dict[str, int]:
        return {str(witness): int(size) for witness, size in await self._all(KEYS.witness_sizes, (tenant_id,))}


async def _add_device(conn: Conn, tenant_id: str, index: int, added: AddDevice) -> None:
    """Store the device an entry of the tenant's log at `index` adds; UnknownReference when its
    principal is not of the tenant, AlreadyExists when either of its key ids names a device
    (with the head's row locked, a device added by an append before this one is seen here)."""
    principal_id = added.device.principal_id
    missing = f"no principal {principal_id} in tenant {tenant_id}"
    await _require(conn, KEYS.principal_in_tenant, (principal_id, tenant_id), missing)
    for key_id in (added.device.device_id, added.device.agreement_key_id):
        if await _fetchone(conn, KEYS.find_device, (tenant_id, key_id, tenant_id, key_id)) is not None:
            raise AlreadyExists(key_rows.taken(tenant_id, key_id))
    await _insert(
        conn, KEYS.add_device, key_rows.device_params(tenant_id, index, added), f"device {added.device.device_id}"
    )
