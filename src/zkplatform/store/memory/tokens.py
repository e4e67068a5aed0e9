"""The memory store's tokens: added, minted, found, listed and revoked."""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Collection
from dataclasses import replace

from zkplatform.domain import audit
from zkplatform.domain.audit import Action, Actor
from zkplatform.domain.models import Principal, TokenRecord
from zkplatform.domain.ports.refusals import AlreadyExists, ParentRevoked, PrincipalDisabled, UnknownReference
from zkplatform.domain.ports.tokens import MintOutcome, RevokeOutcome
from zkplatform.domain.request_ids import RequestId
from zkplatform.store.memory.tables import Tables, _insert, _LiveMinted


class MemoryTokens(Tables):
    async def add_token(self, token: TokenRecord, actor: Actor) -> None:
        self._add_token(token)
        self._record([actor.event(token.tenant_id, Action.TOKEN_ISSUED, token=token.token_id)])

    def _add_token(self, token: TokenRecord) -> None:
        principal = self._principals.get(token.principal_id)
        if principal is None:
            raise UnknownReference(f"no principal {token.principal_id}")
        if principal.disabled:
            raise PrincipalDisabled(f"principal {token.principal_id} is disabled")
        if token.token_id in self._token_ids:
            raise AlreadyExists("token already exists")
        _insert(self._tokens, token.secret_hash, token, "token")
        self._token_ids[token.token_id] = token.secret_hash
        owned = self._principal_tokens.setdefault(token.principal_id, [])
        bisect.insort(owned, (token.issued_at, token.token_id, token.secret_hash))
        if token.parent_token_id:
            self._children.setdefault(token.parent_token_id, []).append(token.token_id)

    async def add_minted_token(
        self, token: TokenRecord, cap: int, actor: Actor, *, request: RequestId | None = None
    ) -> MintOutcome:
        if (earlier := self._earlier(actor, request, tuple)) is not None:
            return earlier
        parent = self._tokens.get(self._token_ids.get(token.parent_token_id, b""))
        if parent is not None and parent.revoked:
            raise ParentRevoked(f"token {parent.token_id} was revoked")
        minted = self._minted.setdefault(token.principal_id, _LiveMinted())
        if minted.count(actor.at) >= cap:
            return minted.first_expiry()
        self._add_token(token)
        minted.add(token)
        self._record([actor.event(token.tenant_id, Action.TOKEN_MINTED, token=token.token_id)])
        self._remember(actor, request, (token.token_id,))
        return None

    async def find_token(self, secret_hash: bytes) -> TokenRecord | None:
        return self._tokens.get(secret_hash)

    async def find_token_with_principal(self, secret_hash: bytes) -> tuple[TokenRecord, Principal] | None:
        token = self._tokens.get(secret_hash)
        return None if token is None else (token, self._principals[token.principal_id])

    async def get_token(self, token_id: str) -> TokenRecord | None:
        secret_hash = self._token_ids.get(token_id)
        return None if secret_hash is None else self._tokens[secret_hash]

    async def get_tokens_with_principals(self, token_ids: Collection[str]) -> dict[str, tuple[TokenRecord, Principal]]:
        found = {}
        for token_id in token_ids:
            if (secret_hash := self._token_ids.get(token_id)) is not None:
                token = self._tokens[secret_hash]
                found[token_id] = (token, self._principals[token.principal_id])
        return found

    async def revoke_token_tree(
        self, token_id: str, actor: Actor, action: Action = Action.TOKEN_REVOKED, *, audited: bool = True
    ) -> list[str] | None:
        if token_id not in self._token_ids:
            return None
        tree, walked = [token_id], 0
        while walked < len(tree):  # breadth first, without recursion: a tree may be deep
            tree.extend(self._children.get(tree[walked], ()))
            walked += 1
        revoked = self._revoke(tree)
        tenant_id = self._tokens[self._token_ids[token_id]].tenant_id
        if audited:
            self._record(audit.revoke_events(actor, action, tenant_id, token_id, revoked))
        return revoked

    async def revoke_token_tree_once(self, token_id: str, actor: Actor, request: RequestId | None) -> RevokeOutcome:
        if (earlier := self._earlier(actor, request, tuple)) is not None:
            return earlier
        revoked = await self.revoke_token_tree(token_id, actor)  # no await inside: one step still
        if revoked is not None:
            self._remember(actor, request, tuple(revoked))
        return revoked

    async def list_tokens(
        self,
        tenant_id: str,
        principal_id: str | None,
        *,
        live_at: int | None,
        after: tuple[int, str] | None,
        limit: int,
    ) -> list[tuple[TokenRecord, Principal]]:
        if principal_id is not None:  # newest first from the page's start: a page costs its size, not all
            owned = self._principal_tokens.get(principal_id, [])
            start = len(owned) if after is None else bisect.bisect_left(owned, after)
            newest_first = (self._tokens[owned[i][2]] for i in range(start - 1, -1, -1))
            live = (t for t in newest_first if t.tenant_id == tenant_id and (live_at is None or t.is_live(live_at)))
            return [(t, self._principals[t.principal_id]) for t in itertools.islice(live, limit)]
        # A whole tenant's tokens: a scan of every token (operators list so, rarely).
        found = [
            t
            for t in self._tokens.values()
            if t.tenant_id == tenant_id
            and (live_at is None or t.is_live(live_at))
            and (after is None or (t.issued_at, t.token_id) < after)
        ]
        found.sort(key=lambda t: (t.issued_at, t.token_id), reverse=True)
        return [(t, self._principals[t.principal_id]) for t in found[:limit]]

    async def touch_token(self, token_id: str, now: int, stale_before: int) -> None:
        secret_hash = self._token_ids.get(token_id)
        if secret_hash is None:
            return
        token = self._tokens[secret_hash]
        if token.last_used_at is None or token.last_used_at < stale_before:
            self._tokens[secret_hash] = replace(token, last_used_at=now)
