"""The PostgreSQL store's schema: its version and its migrations."""

from __future__ import annotations

from psycopg import sql

from zkplatform.store.migrations import check_version, migrations
from zkplatform.store.postgres.connection import Conn
from zkplatform.store.postgres.database import Database, _fetchone
from zkplatform.store.statements import POSTGRESQL as SQL

DIALECT = "postgresql"
_MIGRATION_LOCK = 0x7A6B_706C  # pg_advisory_xact_lock key: one migrator at a time


class PostgresSchema(Database):
    async def schema_version(self) -> int | None:
        async with self._connection() as conn:
            exists = await _fetchone(conn, "SELECT to_regclass('schema_version') IS NOT NULL")
            if exists is None or not exists[0]:
                return None
            row = await _fetchone(conn, SQL.schema_version)
        return None if row is None else int(row[0])

    async def migrate(self) -> list[int]:
        """Apply the missing migrations in one transaction, one migrator at a time; the versions applied."""

        async def apply(conn: Conn) -> list[int]:
            await conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
            await conn.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
            row = await _fetchone(conn, SQL.schema_version)
            current = 0 if row is None else int(row[0])
            applied = []
            for migration in migrations(DIALECT):
                if migration.version > current:
                    await conn.execute(sql.SQL(migration.sql))  # a file of ours, several statements
                    applied.append(migration.version)
            if applied:
                await conn.execute(SQL.clear_schema_version)
                await conn.execute(SQL.set_schema_version, (applied[-1],))
            check_version(applied[-1] if applied else current, DIALECT, self._url)
            return applied

        return await self._tx(apply)
