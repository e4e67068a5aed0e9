"""The directory: tenants, principals and vaults."""

from __future__ import annotations

from typing import Protocol

from zkplatform.domain.audit import Actor
from zkplatform.domain.models import Principal, ScopeChange, Tenant, Vault


class DirectoryRepository(Protocol):
    """Tenants, principals and vaults."""

    async def add_tenant(self, tenant: Tenant, actor: Actor) -> None: ...

    async def add_principal(self, principal: Principal, actor: Actor) -> None: ...

    async def add_vault(self, vault: Vault, actor: Actor) -> None: ...

    async def get_principal(self, principal_id: str) -> Principal | None: ...

    async def get_vault(self, vault_id: str) -> Vault | None: ...

    async def list_tenants(self) -> list[Tenant]:
        """Every tenant, by id."""
        ...

    async def list_principals(self, tenant_id: str) -> list[Principal]:
        """The tenant's principals, by id."""
        ...

    async def list_vaults(self, tenant_id: str) -> list[Vault]:
        """The tenant's vaults with their members, by id."""
        ...

    async def list_member_vaults(self, principal_id: str, after: str, limit: int) -> list[Vault]:
        """The vaults the principal is a member of, by id, those after `after` ("" from the first),
        at most `limit`, each with all its members; read in one snapshot."""
        ...

    async def add_vault_member(self, vault_id: str, principal_id: str, actor: Actor) -> bool:
        """Make the principal a member of the vault; False when it already is.
        UnknownReference when there is no such vault, or no such principal in its tenant."""
        ...

    async def remove_vault_member(self, vault_id: str, principal_id: str, actor: Actor) -> bool:
        """The principal is no longer a member: refused on the vault from its next call.
        False when it was not one; UnknownReference when there is no such vault."""
        ...

    async def set_principal_disabled(self, principal_id: str, actor: Actor, *, disabled: bool) -> list[str] | None:
        """Disable (or enable) the principal. Disabling also revokes every token of it,
        in the same transaction, and answers their ids (enabling revives none: an empty
        list); from then on, add_token and add_minted_token refuse it with
        PrincipalDisabled until it is enabled. None when there is no such principal."""
        ...

    async def change_principal_scopes(
        self, tenant_id: str, principal_id: str, change: ScopeChange, actor: Actor
    ) -> tuple[Principal, Principal]:
        """Atomically: apply `change` to the principal as this transaction reads it
        (ScopeChange.applied), store its new grant and audit it (scopes_event); the principal
        before and after. A change that leaves the grant as it was writes nothing, no event
        either. A narrowing holds for its existing tokens from their next call, and wakes
        their open watches, which check their scope again (as a revocation does). Refused, with
        nothing changed: ScopesBeyondRole (the role's bound), UnknownReference (no such tenant,
        or no such principal in it)."""
        ...
