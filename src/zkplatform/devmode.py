"""Development mode: demo data in the memory store, tokens and demo keys in a credentials file.

The development data set of docs/api.md: two tenants; the first has an owner and a member
and two vaults, the member not being a member of the owner's vault; the second
has one principal and one vault. Each principal has a recipient key published in its
tenant's directory, and every vault holds six live items sealed for the keys of its
members, as the client packages seal them (docs/sealing.md), so that a demo opens them.
The keys and the sealed items are read from dev_data.json (scripts/make_dev_data.py made
it with the Python client package): the server itself seals nothing. Each principal gets
a one-hour token with every scope its role allows. The tokens and the demo private keys
go to the credentials file only, never to the server's output.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from zkplatform.domain.audit import Actor
from zkplatform.domain.clock import Clock
from zkplatform.domain.issuing import TokenIssuer
from zkplatform.domain.models import EncryptedPayload, Item, Principal, Role, Tenant, Vault, WrappedKey
from zkplatform.domain.recipient_keys import RecipientKey, public_key
from zkplatform.repository import Store

DEV_TOKEN_TTL_SECONDS = 3600

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


@cache
def _data() -> dict[str, Any]:
    document: dict[str, Any] = json.loads(resources.files(__package__).joinpath("dev_data.json").read_text())
    return document


def _demo_items(tenant_id: str, vault_id: str, now: int) -> list[Item]:
    return [
        Item(
            item_id=item["itemId"],
            tenant_id=tenant_id,
            vault_id=vault_id,
            version=1,
            kind=item["kind"],
            title_hash=item["titleHash"],
            updated_at=now,
            payload=EncryptedPayload(**item["encryptedPayload"]),
            wrapped_keys=tuple(
                WrappedKey(key["recipientId"], key["wrapAlg"], key["wrappedKey"]) for key in item["wrappedKeys"]
            ),
        )
        for item in _data()["vaults"][vault_id]
    ]


def _demo_key(tenant_id: str, principal_id: str, now: int) -> RecipientKey:
    public = public_key(_data()["principals"][principal_id]["publicKeyJwk"])
    return RecipientKey(public.key_id, tenant_id, principal_id, public.jwk, now)


async def seed(store: Store, issuer: TokenIssuer, clock: Clock, *, keys: bool = True) -> list[DevTenant]:
    """Create the development data set and a token per principal; with `keys`, publish each
    principal's demo recipient key (the sealed items are sealed for them all the same)."""
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
            key = _demo_key(tenant_id, principal_id, now)
            if keys:
                await store.publish_key(key, operator)
            tenant.principals.append(
                {
                    "principalId": principal_id,
                    "role": role.value,
                    "token": issued.secret,
                    "keyId": key.key_id,
                    "privateKeyJwk": _data()["principals"][principal_id]["privateKeyJwk"],
                }
            )
        for vault_id, members in vaults:
            await store.add_vault(Vault(vault_id, tenant_id, frozenset(members)), operator)
            items = _demo_items(tenant_id, vault_id, now)
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
