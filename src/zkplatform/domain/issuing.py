"""Issuing tokens: the one path by which a token comes to exist.

Operators use it directly (the root token at initialisation, `admin token
issue`), the development mode uses it for its seeded principals, and minting
through the API uses it once its own checks have passed.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from zkplatform.domain import tokens
from zkplatform.domain.clock import Clock
from zkplatform.domain.errors import ScopesNotHeld
from zkplatform.domain.models import Principal, Scope, TokenRecord
from zkplatform.repository import TokenRepository


@dataclass(frozen=True, slots=True)
class IssuedToken:
    """A new token: the secret, shown once, and what the server keeps of it."""

    secret: str
    record: TokenRecord


class TokenIssuer:
    def __init__(self, tokens_repo: TokenRepository, hasher: tokens.TokenHasher, clock: Clock) -> None:
        self._tokens = tokens_repo
        self._hash = hasher
        self._clock = clock

    async def issue(  # noqa: PLR0913 # keyword-only options of one operation
        self,
        principal: Principal,
        ttl_seconds: int,
        scopes: Iterable[Scope] | None = None,
        *,
        expires_at_most: int | None = None,
        pop_key_id: str = "",
        minted: bool = False,
    ) -> IssuedToken:
        """Issue a token for the principal: by default with every scope it may hold."""
        granted = principal.scopes if scopes is None else frozenset(scopes)
        if refused := granted - principal.scopes:
            raise ScopesNotHeld(sorted(refused))
        now = self._clock()
        expires_at = now + ttl_seconds
        if expires_at_most is not None:
            expires_at = min(expires_at, expires_at_most)
        secret = tokens.new_token()
        record = TokenRecord(
            token_id=tokens.new_token_id(),
            secret_hash=self._hash(secret),
            tenant_id=principal.tenant_id,
            principal_id=principal.principal_id,
            scopes=granted,
            issued_at=now,
            expires_at=expires_at,
            pop_key_id=pop_key_id,
            minted=minted,
        )
        await self._tokens.add_token(record)
        return IssuedToken(secret, record)
