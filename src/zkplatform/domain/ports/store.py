"""Store: every port in one, what a store adapter provides and the composition root hands out."""

from __future__ import annotations

from typing import Protocol

from zkplatform.domain.ports.audit import AuditRepository
from zkplatform.domain.ports.changes import ChangeFeed
from zkplatform.domain.ports.directory import DirectoryRepository
from zkplatform.domain.ports.items import ItemRepository
from zkplatform.domain.ports.key_log import KeyLogRepository
from zkplatform.domain.ports.limits import LimitsRepository
from zkplatform.domain.ports.tokens import TokenRepository


class Store(
    DirectoryRepository,
    ItemRepository,
    TokenRepository,
    LimitsRepository,
    AuditRepository,
    KeyLogRepository,
    Protocol,
):
    """Everything a store adapter provides."""

    def change_feed(self) -> ChangeFeed:
        """This worker's feed of the store's changes (the same one on every call)."""
        ...

    async def ping(self) -> None:
        """One cheap round trip to the store (PostgreSQL: `SELECT 1` on a pooled connection;
        SQLite: a read of the file), bounded in time: StoreUnavailable when it cannot be
        reached now. What readiness asks (domain/readiness.py), never more than its cache lets."""
        ...

    async def close(self) -> None: ...
