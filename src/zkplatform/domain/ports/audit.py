"""The audit trail as stored (domain/audit.py makes its events)."""

from __future__ import annotations

from typing import Protocol

from zkplatform.domain.audit import AuditRecord, Head


class AuditRepository(Protocol):
    """The audit trail as stored, to export and verify it."""

    async def audit_tenants(self) -> list[str]:
        """Every tenant with an event or a chain head, sorted."""
        ...

    async def audit_head(self, tenant_id: str) -> Head | None:
        """Where the store last wrote the tenant's chain; None before its first event."""
        ...

    async def audit_records(self, tenant_id: str, after: int, limit: int) -> list[AuditRecord]:
        """At most `limit` of the tenant's events with a sequence above `after`, ascending."""
        ...
