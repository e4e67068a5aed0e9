"""The state that limits abuse: mint attempts and DPoP proofs seen."""

from __future__ import annotations

from typing import Protocol


class LimitsRepository(Protocol):
    """State that limits abuse, shared by every worker that uses the store."""

    async def record_mint_attempt(self, principal_id: str, now: int, window_seconds: int, limit: int) -> int | None:
        """Count an attempt; when the window now holds more than `limit`,
        return the seconds until one more attempt would be within it."""
        ...

    async def remember_proof(self, key_thumbprint: str, jti: str, now: int, expires_at: int) -> bool:
        """Record a DPoP proof's jti until `expires_at`; False when that key
        already used it and the record has not lapsed by `now` (a replay)."""
        ...
