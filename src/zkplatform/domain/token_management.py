"""Listing and revoking tokens: a user's view of their tokens, and logout.

Tokens form trees: a minted token remembers the token it was minted from, and
revoking a token revokes every token minted from it, transitively (the store does
it in one transaction). A token's tree belongs to one principal, since a token
mints only for its own principal.
"""

from __future__ import annotations

from dataclasses import dataclass

from zkplatform.domain.auth import Caller
from zkplatform.domain.clock import Clock
from zkplatform.domain.errors import PrincipalAccessDenied, RequestIdReused, TokenNotFound
from zkplatform.domain.models import Role, Scope, TokenRecord
from zkplatform.domain.paging import ElementSizes, PageTokens, Position, fitting, page_limit
from zkplatform.domain.ports.tokens import TokenRepository
from zkplatform.domain.request_ids import Repeated, RequestId, Reused

EVERY_PRINCIPAL = "-"
# Roles that manage every token of their tenant, not only their own principal's.
TENANT_MANAGERS = frozenset({Role.OWNER, Role.ADMIN})


@dataclass(frozen=True, slots=True)
class ListedToken:
    record: TokenRecord
    role: Role  # its principal's


@dataclass(frozen=True, slots=True)
class TokenPage:
    tokens: tuple[ListedToken, ...]
    next_page_token: str  # "" on the last page


class TokenManagement:
    def __init__(self, tokens_repo: TokenRepository, pages: PageTokens, clock: Clock, sizes: ElementSizes) -> None:
        self._tokens = tokens_repo
        self._pages = pages
        self._clock = clock
        self._sizes = sizes

    async def list_tokens(self, caller: Caller, principal_id: str, page_size: int, page_token: str) -> TokenPage:
        """Live tokens, newest first, at most `page_size` (page_limit) and at most a page's bytes. Checks in
        the contract's order: the scope, whose tokens the caller may see, then the page token."""
        caller.require_scope(Scope.BROKER_TOKENS_MANAGE)
        own = caller.principal.principal_id
        listed = own if principal_id in ("", own) else principal_id
        if listed != own and caller.principal.role not in TENANT_MANAGERS:
            raise PrincipalAccessDenied("only an owner or admin may list the tokens of other principals")
        limit = page_limit(page_size)
        position = self._pages.read(page_token, caller.tenant_id, listed) if page_token else None
        after = None if position is None else (position.number, position.after)
        found = await self._tokens.list_tokens(
            caller.tenant_id,
            None if listed == EVERY_PRINCIPAL else listed,
            live_at=self._clock(),
            after=after,
            limit=limit + 1,  # one more than the page: is there a next one?
        )
        page = tuple(ListedToken(record, principal.role) for record, principal in found[:limit])
        page = page[: fitting(page, lambda listed: self._sizes.token(listed.record, listed.role))]
        next_page_token = ""
        if len(found) > len(page):
            last = page[-1].record
            next_page_token = self._pages.issue(Position(last.issued_at, last.token_id), caller.tenant_id, listed)
        return TokenPage(page, next_page_token)

    async def revoke(self, caller: Caller, token_id: str, *, request: RequestId | None = None) -> list[str]:
        """Revoke the token and its tree; the ids revoked now (none when it already was), or
        those a call of the principal's with that request id revoked. A token the caller may
        not revoke answers exactly as an unknown one, whatever the request id."""
        target = await self._tokens.get_token(token_id)
        if target is None or target.tenant_id != caller.tenant_id or not await self._may_revoke(caller, target):
            raise TokenNotFound(token_id)
        match await self._tokens.revoke_token_tree_once(token_id, caller.actor(self._clock()), request):
            case Repeated(answer):
                return list(answer)
            case Reused():
                raise RequestIdReused
            case list() as revoked:
                return revoked
        return []  # no such token: it was there a moment ago, and tokens are never removed

    async def _may_revoke(self, caller: Caller, target: TokenRecord) -> bool:
        """Its own tree, always (a logout needs no scope); with broker.tokens.manage, any token
        of its principal, or of its tenant for an owner or admin. The tenant is checked first."""
        if target.token_id == caller.token.token_id:
            return True
        if Scope.BROKER_TOKENS_MANAGE in caller.scopes and (
            target.principal_id == caller.principal.principal_id or caller.principal.role in TENANT_MANAGERS
        ):
            return True
        if target.principal_id != caller.principal.principal_id:
            return False  # a tree never leaves its principal
        return await self._descends_from(target, caller.token.token_id)

    async def _descends_from(self, token: TokenRecord, ancestor_id: str) -> bool:
        seen = {token.token_id}
        while token.parent_token_id and token.parent_token_id not in seen:
            if token.parent_token_id == ancestor_id:
                return True
            parent = await self._tokens.get_token(token.parent_token_id)
            if parent is None:
                return False
            seen.add(parent.token_id)
            token = parent
        return False
