"""The PostgreSQL store's audit trail, as stored."""

from __future__ import annotations

from zkplatform.domain.audit import AuditRecord, Head
from zkplatform.store import rows
from zkplatform.store.postgres.database import Database
from zkplatform.store.statements import POSTGRESQL as SQL


class PostgresAudit(Database):
    async def audit_tenants(self) -> list[str]:
        return [row[0] for row in await self._all(SQL.audit_tenants)]

    async def audit_head(self, tenant_id: str) -> Head | None:
        row = await self._one(SQL.audit_head, (tenant_id,))
        return rows.audit_head_from_row(row, tenant_id)

    async def audit_records(self, tenant_id: str, after: int, limit: int) -> list[AuditRecord]:
        return [
            rows.audit_record_from_row(row) for row in await self._all(SQL.audit_records, (tenant_id, after, limit))
        ]
