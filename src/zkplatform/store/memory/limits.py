"""The memory store's limits: mint attempts counted, DPoP proofs remembered."""

from __future__ import annotations

import heapq
from collections import deque

from zkplatform.store.memory.tables import Tables


class MemoryLimits(Tables):
    async def record_mint_attempt(self, principal_id: str, now: int, window_seconds: int, limit: int) -> int | None:
        attempts = self._mint_attempts.setdefault(principal_id, deque())
        while attempts and attempts[0] <= now - window_seconds:
            attempts.popleft()
        attempts.append(now)
        if len(attempts) <= limit:
            return None
        # The next attempt fits once all but limit - 1 of these have left the window.
        return max(1, attempts[len(attempts) - limit] + window_seconds - now)

    async def remember_proof(self, key_thumbprint: str, jti: str, now: int, expires_at: int) -> bool:
        while self._proofs_by_expiry and self._proofs_by_expiry[0][0] < now:
            lapsed, thumb, old = heapq.heappop(self._proofs_by_expiry)
            if self._proofs.get((thumb, old)) == lapsed:
                del self._proofs[(thumb, old)]
        key = (key_thumbprint, jti)
        if key in self._proofs:
            return False
        self._proofs[key] = expires_at
        heapq.heappush(self._proofs_by_expiry, (expires_at, key_thumbprint, jti))
        return True
