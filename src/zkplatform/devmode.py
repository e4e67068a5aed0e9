"""Development mode: demo data in the memory store, tokens in a credentials file.

The development data set of docs/api.md: two tenants; the first has an owner and a member
and two vaults, the member not being a member of the owner's vault; the second
has one principal and one vault. Every vault holds live items, each with an
encrypted payload and two wrapped keys. Each principal gets a one-hour token
with every scope its role allows. The tokens go to the credentials file only,
never to the server's output.
"""

from __future__ import annotations

import base64
import json
import os
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zkplatform.domain.audit import Actor
from zkplatform.domain.clock import Clock
from zkplatform.domain.issuing import TokenIssuer
from zkplatform.domain.models import EncryptedPayload, Item, Principal, Role, Tenant, Vault, WrappedKey
from zkplatform.repository import Store

DEV_TOKEN_TTL_SECONDS = 3600
ITEMS_PER_VAULT = 6

# tenant -> principals (id, role); vaults (id, members)
_DATA: list[tuple[str, list[tuple[str, Role]], list[tuple[str, list[str]]]]] = [
    (
        "acme",
        [("alice", Role.OWNER), ("bob", Role.MEMBER)],
        [("acme-private", ["alice"]), ("acme-shared", ["alice", "bob"])],
    ),
    ("globex", [("carol", Role.OWNER)], [("globex-main", ["carol"])]),
]


@dataclass
class DevTenant:
    tenant_id: str
    principals: list[dict[str, str]] = field(default_factory=list)
    vaults: list[dict[str, Any]] = field(default_factory=list)


def _b64(size: int) -> str:
    return base64.urlsafe_b64encode(secrets.token_bytes(size)).rstrip(b"=").decode()


def _demo_item(tenant_id: str, vault_id: str, number: int, members: list[str], now: int) -> Item:
    return Item(
        item_id=f"item-{number}",
        tenant_id=tenant_id,
        vault_id=vault_id,
        version=1,
        kind="login" if number % 2 else "note",
        title_hash=_b64(32),
        updated_at=now,
        payload=EncryptedPayload(alg="A256GCM", nonce=_b64(12), aad=_b64(16), ciphertext=_b64(96), version=1),
        wrapped_keys=tuple(
            WrappedKey(recipient_id=recipient, wrap_alg="ECDH-ES+A256KW", wrapped_key=_b64(40))
            # Two keys per item, one per recipient: a vault of one member also wraps for a recovery key.
            for recipient in [*members, f"{members[0]}:recovery"][:2]
        ),
    )


async def seed(store: Store, issuer: TokenIssuer, clock: Clock) -> list[DevTenant]:
    """Create the development data set and a token per principal."""
    now = clock()
    operator = Actor.operator(now)  # the development data set is the operator's doing
    result = []
    for tenant_id, principals, vaults in _DATA:
        tenant = DevTenant(tenant_id)
        await store.add_tenant(Tenant(tenant_id), operator)
        for principal_id, role in principals:
            principal = Principal(principal_id, tenant_id, role, role.default_scopes)
            await store.add_principal(principal, operator)
            issued = await issuer.issue(principal, DEV_TOKEN_TTL_SECONDS)
            tenant.principals.append({"principalId": principal_id, "role": role.value, "token": issued.secret})
        for vault_id, members in vaults:
            await store.add_vault(Vault(vault_id, tenant_id, frozenset(members)), operator)
            items = [_demo_item(tenant_id, vault_id, n, members, now) for n in range(1, ITEMS_PER_VAULT + 1)]
            await store.add_items(items, operator)
            listed = [{"itemId": item.item_id, "version": item.version} for item in items]
            tenant.vaults.append({"vaultId": vault_id, "members": members, "items": listed})
        result.append(tenant)
    return result


def write_credentials(path: Path, base_url: str, tenants: list[DevTenant]) -> Path:
    """Write the credentials file atomically (write, then rename), readable only by its owner."""
    document = {
        "baseUrl": base_url,
        "tenants": [{"tenantId": t.tenant_id, "principals": t.principals, "vaults": t.vaults} for t in tenants],
    }
    path = path.resolve()
    path.parent.mkdir(parents=True, exist_ok=True)
    draft = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as file:
        json.dump(document, file, indent=2)
        file.write("\n")
        file.flush()
        os.fsync(file.fileno())
    draft.replace(path)
    return path
