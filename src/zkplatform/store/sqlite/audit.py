"""The SQLite store's audit trail, as stored."""

from __future__ import annotations

from zkplatform.domain.audit import AuditRecord, Head
from zkplatform.store import rows
from zkplatform.store.sqlite.database import Database, _as_stored, _head
from zkplatform.store.statements import SQLITE as SQL


class SQLiteAudit(Database):
    async def audit_tenants(self) -> list[str]:
        return [row[0] for row in await self._read(lambda c: c.execute(SQL.audit_tenants).fetchall())]

    async def audit_head(self, tenant_id: str) -> Head | None:
        row = await self._read(_as_stored(lambda c: c.execute(SQL.audit_head, (tenant_id,)).fetchone()))
        return _head(row, tenant_id)

    async def audit_records(self, tenant_id: str, after: int, limit: int) -> list[AuditRecord]:
        found = await self._read(
            _as_stored(lambda c: c.execute(SQL.audit_records, (tenant_id, after, limit)).fetchall())
        )
        return [rows.audit_record_from_row(row) for row in found]
