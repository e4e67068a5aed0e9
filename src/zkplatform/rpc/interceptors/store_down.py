"""Calls of the platform while the store is known down: refused at once.

Every platform RPC needs the store (its token is looked up there first). While readiness
(domain/readiness.py) knows the store down, a call answers `unavailable` STORE_UNAVAILABLE with
its RetryInfo at once, before its token is looked up, instead of waiting for a pooled connection
that cannot come (the pool's acquire timeout, 5 s on PostgreSQL). Health and reflection do not
pass here: health says the store is down; reflection needs no store.
"""

from __future__ import annotations

from typing import Any

from connectrpc.request import RequestContext

from zkplatform.domain.errors import StoreUnavailable
from zkplatform.domain.readiness import Readiness


class RefuseWhileStoreDown:
    """Metadata interceptor: StoreUnavailable at once while the store is known down."""

    def __init__(self, readiness: Readiness) -> None:
        self._readiness = readiness

    async def on_start(self, ctx: RequestContext[Any, Any]) -> None:
        if await self._readiness.refuses():
            raise StoreUnavailable

    async def on_end(self, token: None, ctx: RequestContext[Any, Any], error: Exception | None, /) -> None:
        return None
