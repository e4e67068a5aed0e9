"""The PostgreSQL store's directory: tenants, principals, vaults and their members."""

from __future__ import annotations

from zkplatform.domain import audit
from zkplatform.domain.audit import Action, Actor
from zkplatform.domain.models import Principal, ScopeChange, Tenant, Vault
from zkplatform.domain.ports.refusals import UnknownReference
from zkplatform.store import rows
from zkplatform.store.notify import CHANNEL
from zkplatform.store.postgres.connection import Conn
from zkplatform.store.postgres.database import Database, _fetchone, _insert, _record, _require
from zkplatform.store.statements import POSTGRESQL as SQL

# "revoked <token id>" for each token of a principal live at a time: (channel, principal, now).
# Each token's watches check their access again, as after a revocation (store/notify.py).
_ANNOUNCE_ACCESS = (
    "SELECT pg_notify(%s, 'revoked ' || token_id) FROM tokens"
    " WHERE principal_id = %s AND revoked = FALSE AND expires_at > %s"
)


class PostgresDirectory(Database):
    async def add_tenant(self, tenant: Tenant, actor: Actor) -> None:
        async def add(conn: Conn) -> None:
            await _insert(conn, SQL.add_tenant, (tenant.tenant_id,), f"tenant {tenant.tenant_id}")
            await _record(conn, [actor.event(tenant.tenant_id, Action.TENANT_ADDED, tenant=tenant.tenant_id)])

        await self._tx(add)

    async def add_principal(self, principal: Principal, actor: Actor) -> None:
        async def add(conn: Conn) -> None:
            await _require(
                conn,
                SQL.tenant_exists,
                (principal.tenant_id,),
                f"no tenant {principal.tenant_id}",
            )
            await _insert(
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
            event = actor.event(principal.tenant_id, Action.PRINCIPAL_ADDED, principal=principal.principal_id)
            await _record(conn, [event])

        await self._tx(add)

    async def add_vault(self, vault: Vault, actor: Actor) -> None:
        async def add(conn: Conn) -> None:
            await _require(conn, SQL.tenant_exists, (vault.tenant_id,), f"no tenant {vault.tenant_id}")
            for member in sorted(vault.members):
                await _require(
                    conn,
                    SQL.principal_in_tenant,
                    (member, vault.tenant_id),
                    f"no principal {member} in tenant {vault.tenant_id}",
                )
            await _insert(
                conn,
                SQL.add_vault,
                (vault.vault_id, vault.tenant_id),
                f"vault {vault.vault_id}",
            )
            async with conn.cursor() as cursor:
                await cursor.executemany(SQL.add_vault_member, [(vault.vault_id, m) for m in sorted(vault.members)])
            await _record(conn, audit.vault_events(actor, vault))

        await self._tx(add)

    async def get_principal(self, principal_id: str) -> Principal | None:
        row = await self._one(
            SQL.get_principal,
            (principal_id,),
        )
        return None if row is None else rows.principal_from_row(row)

    async def get_vault(self, vault_id: str) -> Vault | None:
        row = await self._one(
            "SELECT v.tenant_id, coalesce(array_agg(m.principal_id) FILTER (WHERE m.principal_id IS NOT NULL), '{}')"
            " FROM vaults v LEFT JOIN vault_members m USING (vault_id) WHERE v.vault_id = %s GROUP BY v.tenant_id",
            (vault_id,),
        )
        return None if row is None else Vault(vault_id, row[0], frozenset(row[1]))

    async def list_tenants(self) -> list[Tenant]:
        return [Tenant(row[0]) for row in await self._all(SQL.list_tenants)]

    async def list_principals(self, tenant_id: str) -> list[Principal]:
        return [rows.principal_from_row(row) for row in await self._all(SQL.list_principals, (tenant_id,))]

    async def list_vaults(self, tenant_id: str) -> list[Vault]:
        found = await self._all(  # one statement: the vaults and their members from one snapshot
            "SELECT v.vault_id, coalesce(array_agg(m.principal_id) FILTER (WHERE m.principal_id IS NOT NULL), '{}')"
            " FROM vaults v LEFT JOIN vault_members m USING (vault_id) WHERE v.tenant_id = %s"
            " GROUP BY v.vault_id ORDER BY v.vault_id",
            (tenant_id,),
        )
        return [Vault(vault_id, tenant_id, frozenset(members)) for vault_id, members in found]

    async def list_member_vaults(self, principal_id: str, after: str, limit: int) -> list[Vault]:
        # One statement: the vaults and their members from one snapshot.
        return rows.member_vaults(await self._all(SQL.member_vaults, (principal_id, after, limit)))

    async def add_vault_member(self, vault_id: str, principal_id: str, actor: Actor) -> bool:
        async def add(conn: Conn) -> bool:
            tenant_id = await _vault_tenant(conn, vault_id)
            missing = f"no principal {principal_id} in tenant {tenant_id}"
            await _require(conn, SQL.principal_in_tenant, (principal_id, tenant_id), missing)
            inserted = await conn.execute(SQL.add_vault_member + " ON CONFLICT DO NOTHING", (vault_id, principal_id))
            if inserted.rowcount == 0:
                return False
            event = actor.event(tenant_id, Action.VAULT_MEMBER_ADDED, vault=vault_id, principal=principal_id)
            await _record(conn, [event])
            return True

        return await self._tx(add)

    async def remove_vault_member(self, vault_id: str, principal_id: str, actor: Actor) -> bool:
        async def remove(conn: Conn) -> bool:
            tenant_id = await _vault_tenant(conn, vault_id)
            if (await conn.execute(SQL.remove_vault_member, (vault_id, principal_id))).rowcount == 0:
                return False
            event = actor.event(tenant_id, Action.VAULT_MEMBER_REMOVED, vault=vault_id, principal=principal_id)
            await _record(conn, [event])
            return True

        return await self._tx(remove)

    async def set_principal_disabled(self, principal_id: str, actor: Actor, *, disabled: bool) -> list[str] | None:
        async def update(conn: Conn) -> list[str] | None:
            # The UPDATE locks the principal's row: a mint or an issue for it waits, then sees the flag.
            if (await conn.execute(SQL.set_principal_disabled, (disabled, principal_id))).rowcount == 0:
                return None
            revoked = []
            if disabled:
                cursor = await conn.execute(SQL.revoke_principal_tokens, (principal_id,))
                revoked = sorted(row[0] for row in await cursor.fetchall())
            (tenant_id,) = await _fetchone(conn, SQL.principal_tenant, (principal_id,)) or ("",)
            await _record(conn, audit.disable_events(actor, tenant_id, principal_id, revoked, disabled=disabled))
            return revoked

        return await self._tx(update)

    async def change_principal_scopes(
        self, tenant_id: str, principal_id: str, change: ScopeChange, actor: Actor
    ) -> tuple[Principal, Principal]:
        async def update(conn: Conn) -> tuple[Principal, Principal]:
            # The row locked: changes of one grant at once apply in turn, each to what the other left.
            row = await _fetchone(conn, SQL.principal_of_tenant + " FOR UPDATE", (principal_id, tenant_id))
            if row is None:
                await _require(conn, SQL.tenant_exists, (tenant_id,), f"no tenant {tenant_id}")
                raise UnknownReference(f"no principal {principal_id} in tenant {tenant_id}")
            before = rows.principal_from_row(row)
            after = change.applied(before)
            if after.allowed_scopes == before.allowed_scopes:
                return before, after
            await conn.execute(SQL.set_principal_scopes, (rows.scopes_to_text(after.allowed_scopes), principal_id))
            await _record(conn, [audit.scopes_event(actor, before, after)])
            if before.scopes - after.scopes:
                # A narrowing: every worker's open watches of the principal's tokens check their
                # scope again, at the commit, woken by the payload a revocation's trigger sends
                # (migration 0006); no token changes, so nothing else would send it.
                await conn.execute(_ANNOUNCE_ACCESS, (CHANNEL, principal_id, actor.at))
            return before, after

        return await self._tx(update)


async def _vault_tenant(conn: Conn, vault_id: str) -> str:
    row = await _fetchone(conn, SQL.vault_tenant, (vault_id,))
    if row is None:
        raise UnknownReference(f"no vault {vault_id}")
    return str(row[0])
