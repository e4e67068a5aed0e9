"""The SQLite store's limits: mint attempts counted, DPoP proofs remembered."""

from __future__ import annotations

import sqlite3

from zkplatform.store.sqlite.database import Database
from zkplatform.store.statements import SQLITE as SQL


class SQLiteLimits(Database):
    async def record_mint_attempt(self, principal_id: str, now: int, window_seconds: int, limit: int) -> int | None:
        def record(conn: sqlite3.Connection) -> int | None:
            conn.execute(SQL.forget_mint_attempts, (principal_id, now - window_seconds))
            conn.execute(SQL.add_mint_attempt, (principal_id, now))
            attempts = [r[0] for r in conn.execute(SQL.mint_attempts, (principal_id,))]
            if len(attempts) <= limit:
                return None
            return max(1, int(attempts[len(attempts) - limit]) + window_seconds - now)

        return await self._write(record)

    async def remember_proof(self, key_thumbprint: str, jti: str, now: int, expires_at: int) -> bool:
        def remember(conn: sqlite3.Connection) -> bool:
            conn.execute(SQL.forget_lapsed_proofs, (now,))
            inserted = conn.execute(SQL.remember_proof, (key_thumbprint, jti, expires_at)).rowcount
            return inserted > 0

        return await self._write(remember)
