"""The bearer tokens: added, minted, found and revoked."""

from __future__ import annotations

from collections.abc import Collection
from typing import Protocol

from zkplatform.domain.audit import Action, Actor
from zkplatform.domain.models import Principal, TokenRecord
from zkplatform.domain.request_ids import Repeated, RequestId, Reused

# A mint's: None when added, when the first live minted token expires when the cap is reached.
MintOutcome = int | None | Repeated[tuple[str, ...]] | Reused
# A revocation's: the ids revoked, or None when there is no such token.
RevokeOutcome = list[str] | None | Repeated[tuple[str, ...]] | Reused


class TokenRepository(Protocol):
    async def add_token(self, token: TokenRecord, actor: Actor) -> None:
        """Add a token; UnknownReference without its principal, PrincipalDisabled
        when the principal is disabled."""
        ...

    async def add_minted_token(
        self, token: TokenRecord, cap: int, actor: Actor, *, request: RequestId | None = None
    ) -> MintOutcome:
        """Atomically add a minted token unless its principal already has `cap`
        live minted tokens at `actor.at`; then add nothing and return when the first
        of those expires. ParentRevoked when its parent is revoked, PrincipalDisabled when
        its principal is disabled: checked in the same transaction, so that a
        revocation or a disable that commits first is never outlived by a child. The
        answer recorded under `request` is the token's id (never its secret), and a
        repeat is looked for before anything else, the cap included."""
        ...

    async def get_token(self, token_id: str) -> TokenRecord | None:
        """The token with that public id, live or not."""
        ...

    async def get_tokens_with_principals(self, token_ids: Collection[str]) -> dict[str, tuple[TokenRecord, Principal]]:
        """The tokens with those public ids, live or not, each with its principal as it is now,
        by id (an id no token has is left out), in one lookup: what open watches check again (the
        token revoked or expired, the principal's scopes narrowed), all those woken together at once."""
        ...

    async def find_token(self, secret_hash: bytes) -> TokenRecord | None: ...

    async def find_token_with_principal(self, secret_hash: bytes) -> tuple[TokenRecord, Principal] | None:
        """The token with that HMAC and the principal it was issued to, in one
        lookup: every call authenticates, so this is the hottest read there is."""
        ...

    async def revoke_token_tree(
        self, token_id: str, actor: Actor, action: Action = Action.TOKEN_REVOKED, *, audited: bool = True
    ) -> list[str] | None:
        """Revoke the token and every token minted from it, transitively, in one
        transaction; the ids revoked by this call, sorted (already revoked ones are
        not repeated). Each revoked token's event is `action`, with the token and
        the tree's root as its target. None when there is no such token.

        `audited=False` records no event: only for a leaked token whose audited revocation
        failed, where leaving the token live would be worse than a gap in the trail."""
        ...

    async def revoke_token_tree_once(self, token_id: str, actor: Actor, request: RequestId | None) -> RevokeOutcome:
        """RevokeToken's revocation: revoke_token_tree (TOKEN_REVOKED, audited), its answer
        recorded under `request`, unless it repeats a call of the principal's with that id."""
        ...

    async def list_tokens(
        self,
        tenant_id: str,
        principal_id: str | None,
        *,
        live_at: int | None,
        after: tuple[int, str] | None,
        limit: int,
    ) -> list[tuple[TokenRecord, Principal]]:
        """At most `limit` tokens of the tenant (of one principal, unless None), with
        their principals, newest first: by (issued_at, token_id) descending, below
        `after` when given. Only those live at `live_at`, unless it is None."""
        ...

    async def touch_token(self, token_id: str, now: int, stale_before: int) -> None:
        """Record `now` as the token's last use, unless its stored last use is at or
        after `stale_before`. Best effort, and it may return before the write is
        durable: it must never make a call wait (a failure is logged, not raised)."""
        ...
