"""The SQLite store's directory: tenants, principals, vaults and their members."""

from __future__ import annotations

import sqlite3

from zkplatform.domain import audit
from zkplatform.domain.audit import Action, Actor
from zkplatform.domain.models import Principal, ScopeChange, Tenant, Vault
from zkplatform.domain.ports.refusals import UnknownReference
from zkplatform.store import rows
from zkplatform.store.sqlite.database import Database, _insert, _record, _require
from zkplatform.store.statements import SQLITE as SQL


class SQLiteDirectory(Database):
    async def add_tenant(self, tenant: Tenant, actor: Actor) -> None:
        def add(conn: sqlite3.Connection) -> None:
            _insert(conn, SQL.add_tenant, (tenant.tenant_id,), f"tenant {tenant.tenant_id}")
            _record(conn, [actor.event(tenant.tenant_id, Action.TENANT_ADDED, tenant=tenant.tenant_id)])

        await self._write(add)

    async def add_principal(self, principal: Principal, actor: Actor) -> None:
        def add(conn: sqlite3.Connection) -> None:
            _require(
                conn,
                SQL.tenant_exists,
                (principal.tenant_id,),
                f"no tenant {principal.tenant_id}",
            )
            _insert(
                conn,
                SQL.add_principal,
                (
                    principal.principal_id,
                    principal.tenant_id,
                    principal.role.value,
                    rows.scopes_to_text(principal.allowed_scopes),
                ),
                f"principal {principal.principal_id}",
            )
            _record(conn, [actor.event(principal.tenant_id, Action.PRINCIPAL_ADDED, principal=principal.principal_id)])

        await self._write(add)

    async def add_vault(self, vault: Vault, actor: Actor) -> None:
        def add(conn: sqlite3.Connection) -> None:
            _require(conn, SQL.tenant_exists, (vault.tenant_id,), f"no tenant {vault.tenant_id}")
            for member in sorted(vault.members):
                _require(
                    conn,
                    SQL.principal_in_tenant,
                    (member, vault.tenant_id),
                    f"no principal {member} in tenant {vault.tenant_id}",
                )
            _insert(
                conn,
                SQL.add_vault,
                (vault.vault_id, vault.tenant_id),
                f"vault {vault.vault_id}",
            )
            conn.executemany(SQL.add_vault_member, [(vault.vault_id, m) for m in sorted(vault.members)])
            _record(conn, audit.vault_events(actor, vault))

        await self._write(add)

    async def get_principal(self, principal_id: str) -> Principal | None:
        row = self._lookup(
            lambda c: c.execute(
                SQL.get_principal,
                (principal_id,),
            ).fetchone()
        )
        return None if row is None else rows.principal_from_row(row)

    async def get_vault(self, vault_id: str) -> Vault | None:
        def get(conn: sqlite3.Connection) -> Vault | None:
            row = conn.execute("SELECT tenant_id FROM vaults WHERE vault_id = ?", (vault_id,)).fetchone()
            if row is None:
                return None
            members = conn.execute("SELECT principal_id FROM vault_members WHERE vault_id = ?", (vault_id,)).fetchall()
            return Vault(vault_id, row[0], frozenset(m[0] for m in members))

        return self._lookup(get)

    async def list_tenants(self) -> list[Tenant]:
        found = await self._read(lambda c: c.execute(SQL.list_tenants).fetchall())
        return [Tenant(row[0]) for row in found]

    async def list_principals(self, tenant_id: str) -> list[Principal]:
        found = await self._read(lambda c: c.execute(SQL.list_principals, (tenant_id,)).fetchall())
        return [rows.principal_from_row(row) for row in found]

    async def list_vaults(self, tenant_id: str) -> list[Vault]:
        def listed(conn: sqlite3.Connection) -> list[Vault]:
            conn.execute("BEGIN")  # the vaults and their members from one snapshot
            try:
                vault_ids = [row[0] for row in conn.execute(SQL.list_vaults, (tenant_id,))]
                members = conn.execute(SQL.list_vault_members, (tenant_id,)).fetchall()
            finally:
                conn.execute("COMMIT")
            return rows.vaults(tenant_id, vault_ids, members)

        return await self._read(listed)

    async def list_member_vaults(self, principal_id: str, after: str, limit: int) -> list[Vault]:
        found = await self._read(lambda c: c.execute(SQL.member_vaults, (principal_id, after, limit)).fetchall())
        return rows.member_vaults(found)

    async def add_vault_member(self, vault_id: str, principal_id: str, actor: Actor) -> bool:
        def add(conn: sqlite3.Connection) -> bool:
            tenant_id = _vault_tenant(conn, vault_id)
            missing = f"no principal {principal_id} in tenant {tenant_id}"
            _require(conn, SQL.principal_in_tenant, (principal_id, tenant_id), missing)
            if conn.execute(SQL.is_vault_member, (vault_id, principal_id)).fetchone():
                return False
            conn.execute(SQL.add_vault_member, (vault_id, principal_id))
            _record(conn, [actor.event(tenant_id, Action.VAULT_MEMBER_ADDED, vault=vault_id, principal=principal_id)])
            return True

        return await self._write(add)

    async def remove_vault_member(self, vault_id: str, principal_id: str, actor: Actor) -> bool:
        def remove(conn: sqlite3.Connection) -> bool:
            tenant_id = _vault_tenant(conn, vault_id)
            if conn.execute(SQL.remove_vault_member, (vault_id, principal_id)).rowcount == 0:
                return False
            event = actor.event(tenant_id, Action.VAULT_MEMBER_REMOVED, vault=vault_id, principal=principal_id)
            _record(conn, [event])
            return True

        removed = await self._write(remove)
        if removed:  # this worker's watches at once; the poller wakes the others' (and these again)
            self._feed.access_changed(vault_id)
        return removed

    async def set_principal_disabled(self, principal_id: str, actor: Actor, *, disabled: bool) -> list[str] | None:
        def update(conn: sqlite3.Connection) -> list[str] | None:
            if conn.execute(SQL.set_principal_disabled, (disabled, principal_id)).rowcount == 0:
                return None
            revoked = []
            if disabled:
                revoked = sorted(row[0] for row in conn.execute(SQL.revoke_principal_tokens, (principal_id,)))
            (tenant_id,) = conn.execute(SQL.principal_tenant, (principal_id,)).fetchone()
            _record(conn, audit.disable_events(actor, tenant_id, principal_id, revoked, disabled=disabled))
            return revoked

        revoked = await self._write(update)
        self._feed.revoked(revoked or ())
        return revoked

    async def change_principal_scopes(
        self, tenant_id: str, principal_id: str, change: ScopeChange, actor: Actor
    ) -> tuple[Principal, Principal]:
        def update(conn: sqlite3.Connection) -> tuple[Principal, Principal, list[str]]:
            row = conn.execute(SQL.principal_of_tenant, (principal_id, tenant_id)).fetchone()
            if row is None:
                _require(conn, SQL.tenant_exists, (tenant_id,), f"no tenant {tenant_id}")
                raise UnknownReference(f"no principal {principal_id} in tenant {tenant_id}")
            before = rows.principal_from_row(row)
            after = change.applied(before)
            if after.allowed_scopes == before.allowed_scopes:
                return before, after, []
            conn.execute(SQL.set_principal_scopes, (rows.scopes_to_text(after.allowed_scopes), principal_id))
            _record(conn, [audit.scopes_event(actor, before, after)])
            if not before.scopes - after.scopes:
                return before, after, []
            # A narrowing: the open watches of the principal's tokens check their scope again. Other
            # processes' pollers wake every watch when the count of revocations moves (migration
            # 0005); no token is revoked, but that count is only their mark of "access may have
            # changed", and moving it needs no schema of its own.
            conn.execute("UPDATE token_revocations SET total = total + 1")
            return before, after, [r[0] for r in conn.execute(SQL.live_principal_tokens, (principal_id, actor.at))]

        before, after, tokens = await self._write(update)
        self._feed.revoked(tokens)  # this worker's watches at once
        return before, after


def _vault_tenant(conn: sqlite3.Connection, vault_id: str) -> str:
    row = conn.execute(SQL.vault_tenant, (vault_id,)).fetchone()
    if row is None:
        raise UnknownReference(f"no vault {vault_id}")
    return str(row[0])
