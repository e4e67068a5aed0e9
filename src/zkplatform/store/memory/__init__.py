"""The in-memory store: the default for development and the fake for tests.

It must behave exactly like the durable stores. Atomicity comes from asyncio:
no method awaits between reading and writing, so each runs as one step that no
other task can interleave with.

One module a port (directory, items, tokens, limits, audit, key_log), each a mixin over the
one set of tables (tables.py), composed here into the one MemoryStore: several ports' methods
change the same tables in one step (disabling a principal revokes its tokens, every change
records its audit events), which separate objects would each have to reach into.
"""

from __future__ import annotations

from zkplatform.store.memory.audit import MemoryAudit
from zkplatform.store.memory.directory import MemoryDirectory
from zkplatform.store.memory.items import MemoryItems
from zkplatform.store.memory.key_log import MemoryKeyLog
from zkplatform.store.memory.limits import MemoryLimits
from zkplatform.store.memory.tokens import MemoryTokens
from zkplatform.store.notify import ChangeFeed


class MemoryStore(MemoryDirectory, MemoryItems, MemoryTokens, MemoryLimits, MemoryAudit, MemoryKeyLog):
    async def close(self) -> None:
        return None

    def change_feed(self) -> ChangeFeed:
        return self._feed

    async def ping(self) -> None:
        return None  # in this process: reachable while the process is

    async def schema_version(self) -> int | None:
        return 0  # nothing to migrate: the memory store has no schema

    async def migrate(self) -> list[int]:
        return []
