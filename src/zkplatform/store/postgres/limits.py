"""The PostgreSQL store's limits: mint attempts counted, DPoP proofs remembered."""

from __future__ import annotations

from zkplatform.store.postgres.connection import Conn
from zkplatform.store.postgres.database import Database, _lock_principal
from zkplatform.store.statements import POSTGRESQL as SQL


class PostgresLimits(Database):
    async def record_mint_attempt(self, principal_id: str, now: int, window_seconds: int, limit: int) -> int | None:
        async def record(conn: Conn) -> int | None:
            await _lock_principal(conn, principal_id)
            await conn.execute(SQL.forget_mint_attempts, (principal_id, now - window_seconds))
            await conn.execute(SQL.add_mint_attempt, (principal_id, now))
            cursor = await conn.execute(SQL.mint_attempts, (principal_id,))
            attempts = [int(r[0]) for r in await cursor.fetchall()]
            if len(attempts) <= limit:
                return None
            return max(1, attempts[len(attempts) - limit] + window_seconds - now)

        return await self._tx(record)

    async def remember_proof(self, key_thumbprint: str, jti: str, now: int, expires_at: int) -> bool:
        async def remember(conn: Conn) -> bool:
            await conn.execute(SQL.forget_lapsed_proofs, (now,))
            inserted = await conn.execute(SQL.remember_proof, (key_thumbprint, jti, expires_at))
            return inserted.rowcount > 0

        return await self._tx(remember)
