"""The memory store's directory: tenants, principals, vaults and their members."""

from __future__ import annotations

from dataclasses import replace

from zkplatform.domain import audit
from zkplatform.domain.audit import Action, Actor
from zkplatform.domain.models import Principal, ScopeChange, Tenant, Vault
from zkplatform.domain.ports.refusals import UnknownReference
from zkplatform.store.memory.tables import Tables, _insert


class MemoryDirectory(Tables):
    async def add_tenant(self, tenant: Tenant, actor: Actor) -> None:
        _insert(self._tenants, tenant.tenant_id, tenant, "tenant")
        self._record([actor.event(tenant.tenant_id, Action.TENANT_ADDED, tenant=tenant.tenant_id)])

    async def add_principal(self, principal: Principal, actor: Actor) -> None:
        if principal.tenant_id not in self._tenants:
            raise UnknownReference(f"no tenant {principal.tenant_id}")
        _insert(self._principals, principal.principal_id, principal, "principal")
        self._record([actor.event(principal.tenant_id, Action.PRINCIPAL_ADDED, principal=principal.principal_id)])

    async def add_vault(self, vault: Vault, actor: Actor) -> None:
        if vault.tenant_id not in self._tenants:
            raise UnknownReference(f"no tenant {vault.tenant_id}")
        for member in sorted(vault.members):
            principal = self._principals.get(member)
            if principal is None or principal.tenant_id != vault.tenant_id:
                raise UnknownReference(f"no principal {member} in tenant {vault.tenant_id}")
        _insert(self._vaults, vault.vault_id, vault, "vault")
        self._sequences[vault.vault_id] = 0
        self._record(audit.vault_events(actor, vault))

    async def get_principal(self, principal_id: str) -> Principal | None:
        return self._principals.get(principal_id)

    async def get_vault(self, vault_id: str) -> Vault | None:
        return self._vaults.get(vault_id)

    async def list_tenants(self) -> list[Tenant]:
        return sorted(self._tenants.values(), key=lambda t: t.tenant_id)

    async def list_principals(self, tenant_id: str) -> list[Principal]:
        return sorted((p for p in self._principals.values() if p.tenant_id == tenant_id), key=lambda p: p.principal_id)

    async def list_vaults(self, tenant_id: str) -> list[Vault]:
        return sorted((v for v in self._vaults.values() if v.tenant_id == tenant_id), key=lambda v: v.vault_id)

    async def list_member_vaults(self, principal_id: str, after: str, limit: int) -> list[Vault]:
        found = (v for v in self._vaults.values() if principal_id in v.members and v.vault_id > after)
        return sorted(found, key=lambda v: v.vault_id)[:limit]

    async def add_vault_member(self, vault_id: str, principal_id: str, actor: Actor) -> bool:
        vault = self._vaults.get(vault_id)
        if vault is None:
            raise UnknownReference(f"no vault {vault_id}")
        principal = self._principals.get(principal_id)
        if principal is None or principal.tenant_id != vault.tenant_id:
            raise UnknownReference(f"no principal {principal_id} in tenant {vault.tenant_id}")
        if principal_id in vault.members:
            return False
        self._vaults[vault_id] = replace(vault, members=vault.members | {principal_id})
        self._record([actor.event(vault.tenant_id, Action.VAULT_MEMBER_ADDED, vault=vault_id, principal=principal_id)])
        return True

    async def remove_vault_member(self, vault_id: str, principal_id: str, actor: Actor) -> bool:
        vault = self._vaults.get(vault_id)
        if vault is None:
            raise UnknownReference(f"no vault {vault_id}")
        if principal_id not in vault.members:
            return False
        self._vaults[vault_id] = replace(vault, members=vault.members - {principal_id})
        self._feed.access_changed(vault_id)
        self._record(
            [actor.event(vault.tenant_id, Action.VAULT_MEMBER_REMOVED, vault=vault_id, principal=principal_id)]
        )
        return True

    async def set_principal_disabled(self, principal_id: str, actor: Actor, *, disabled: bool) -> list[str] | None:
        principal = self._principals.get(principal_id)
        if principal is None:
            return None
        self._principals[principal_id] = replace(principal, disabled=disabled)
        revoked = []
        if disabled:
            revoked = self._revoke(
                [
                    t.token_id
                    for *_, h in self._principal_tokens.get(principal_id, ())
                    if not (t := self._tokens[h]).revoked
                ]
            )
        self._record(audit.disable_events(actor, principal.tenant_id, principal_id, revoked, disabled=disabled))
        return revoked

    async def change_principal_scopes(
        self, tenant_id: str, principal_id: str, change: ScopeChange, actor: Actor
    ) -> tuple[Principal, Principal]:
        before = self._principals.get(principal_id)
        if before is None or before.tenant_id != tenant_id:
            where = f"no principal {principal_id} in tenant {tenant_id}"
            raise UnknownReference(where if tenant_id in self._tenants else f"no tenant {tenant_id}")
        after = change.applied(before)
        if after.allowed_scopes == before.allowed_scopes:
            return before, after
        self._principals[principal_id] = after
        self._record([audit.scopes_event(actor, before, after)])
        if before.scopes - after.scopes:  # its open watches check their scope again
            self._feed.revoked(token_id for _, token_id, _ in self._principal_tokens.get(principal_id, ()))
        return before, after
