"""The memory store's audit trail: its events chained when it is read."""

from __future__ import annotations

from zkplatform.domain import audit
from zkplatform.domain.audit import AuditRecord, Head
from zkplatform.store.memory.tables import Tables


class MemoryAudit(Tables):
    def _chain(self) -> None:
        """Give the events recorded since the trail was last read their places and hashes."""
        for tenant_id, events in audit.by_tenant(self._unchained):
            records = list(audit.appended(self._heads.get(tenant_id), tenant_id, events))
            self._audit.setdefault(tenant_id, []).extend(records)
            last = records[-1]
            self._heads[tenant_id] = Head(tenant_id, last.sequence, last.hash)
        self._unchained.clear()

    async def audit_tenants(self) -> list[str]:
        self._chain()
        return sorted(self._heads.keys() | self._audit.keys())

    async def audit_head(self, tenant_id: str) -> Head | None:
        self._chain()
        return self._heads.get(tenant_id)

    async def audit_records(self, tenant_id: str, after: int, limit: int) -> list[AuditRecord]:
        self._chain()
        records = self._audit.get(tenant_id, [])
        start = max(after, 0)  # nothing is numbered below 1 here: after may be audit.BEFORE_ALL
        return records[start : start + limit]  # sequence n is at index n - 1
