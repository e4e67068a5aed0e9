"""The data every benchmarked server starts with, seeded through the store ports.

One tenant, `bench`. An owner who is a member of every vault and holds the
token the DeleteItem load uses; `minters` principals, each with one token, so
that the MintUserApiToken load spreads over principals the way real traffic
does (the per-principal rate limit and active-token cap stay on, set high by
the operator settings in MINT_POLICY_ENV); and `own_tokens` more tokens of the
owner, the ones the ListTokens load lists and the RevokeToken load revokes. Vaults of `vault_size` items each,
`b-0`, `b-1`, ... dealt out across the vaults: item n lives in vault
`v-{n % vaults}`. Consecutive calls of the load generator thus touch different
vaults, as the calls of many users do; calls on one vault are serialised by its
change sequence, which the single 1,000,000-item vault measures.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from bench.other_commits import by_operator
from zkplatform.domain.issuing import TokenIssuer
from zkplatform.domain.models import EncryptedPayload, Item, Principal, Role, Tenant, Vault, WrappedKey

if TYPE_CHECKING:  # a type only: the ports' module has moved since the older commits served with this one
    from zkplatform.domain.ports.store import Store

TENANT = "bench"
OWNER = "owner"
TOKEN_TTL_SECONDS = 6 * 3600
BATCH = 50_000  # items per add_items call: one transaction each
MINTERS = 500
NOW = 1_800_000_000
# Operator settings (the server's environment) under which the mint load runs:
# every check stays on, with limits that a benchmark's few seconds cannot reach.
MINT_POLICY_ENV = {"ZKPLATFORM_MINT_RATE_PER_MINUTE": "100000", "ZKPLATFORM_MINT_ACTIVE_CAP": "100000"}


@dataclass(frozen=True, slots=True)
class Layout:
    vault_size: int
    items: int
    minters: int = MINTERS
    own_tokens: int = 0

    @property
    def vaults(self) -> int:
        return -(-self.items // self.vault_size)


@dataclass(frozen=True, slots=True)
class Tokens:
    """The secrets the load generator presents; written to a file only the harness reads."""

    delete: str
    mint: Sequence[str]
    own: Sequence[str] = ()  # the ids (not secrets) of the owner's other tokens

    def write(self, path: Path) -> None:
        path.write_text(json.dumps({"delete": self.delete, "mint": list(self.mint), "own": list(self.own)}))
        path.chmod(0o600)

    @classmethod
    def read(cls, path: Path) -> Tokens:
        data = json.loads(path.read_text())
        return cls(data["delete"], data["mint"], data["own"])


def bench_item(number: int, vaults: int) -> Item:
    return Item(
        item_id=f"b-{number}",
        tenant_id=TENANT,
        vault_id=f"v-{number % vaults}",
        version=1,
        kind="note",
        title_hash="dGl0bGUtaGFzaC10aXRsZS1oYXNo",
        updated_at=NOW,
        payload=EncryptedPayload("A256GCM", "bm9uY2Vub25jZQ", "YWFk", "Y2lwaGVydGV4dC1jaXBoZXJ0ZXh0LWNpcGhlcnRleHQ", 1),
        wrapped_keys=(
            WrappedKey(OWNER, "A256KW", "a2V5LWtleS1rZXkta2V5LWtleS1rZXk"),
            WrappedKey("m-0", "A256KW", "a2V5Mi1rZXkyLWtleTIta2V5Mi1rZXky"),
        ),
    )


async def seed(store: Store, issuer: TokenIssuer, layout: Layout) -> Tokens:
    await by_operator(store.add_tenant, Tenant(TENANT), at=NOW)
    owner = Principal(OWNER, TENANT, Role.OWNER, Role.OWNER.default_scopes)
    await by_operator(store.add_principal, owner, at=NOW)
    minters = [Principal(f"m-{n}", TENANT, Role.ADMIN, Role.ADMIN.default_scopes) for n in range(layout.minters)]
    for principal in minters:
        await by_operator(store.add_principal, principal, at=NOW)
    for vault in range(layout.vaults):
        await by_operator(store.add_vault, Vault(f"v-{vault}", TENANT, frozenset({OWNER})), at=NOW)
    for start in range(0, layout.items, BATCH):
        await by_operator(
            store.add_items,
            [bench_item(n, layout.vaults) for n in range(start, min(start + BATCH, layout.items))],
            at=NOW,
        )
    delete = (await issuer.issue(owner, TOKEN_TTL_SECONDS)).secret
    mint = [(await issuer.issue(principal, TOKEN_TTL_SECONDS)).secret for principal in minters]
    own = [(await issuer.issue(owner, TOKEN_TTL_SECONDS)).record.token_id for _ in range(layout.own_tokens)]
    return Tokens(delete, mint, own)
