"""Issuing tokens: the one path by which a token comes to exist.

Operators use it directly (the root token at initialisation, `admin token
issue`), the development mode uses it for its seeded principals, and minting
through the API uses it once its own checks have passed.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from zkplatform.domain import tokens
from zkplatform.domain.audit import Actor
from zkplatform.domain.clock import Clock
from zkplatform.domain.errors import (
    ActiveTokensExceeded,
    PrincipalIsDisabled,
    PrincipalNotFound,
    RequestIdReused,
    ScopesNotHeld,
    TokenAlreadyMinted,
    TokenRevoked,
)
from zkplatform.domain.models import Principal, Role, Scope, TokenRecord
from zkplatform.domain.ports.directory import DirectoryRepository
from zkplatform.domain.ports.refusals import ParentRevoked, PrincipalDisabled
from zkplatform.domain.ports.tokens import TokenRepository
from zkplatform.domain.request_ids import Repeated, RequestId, Reused


@dataclass(frozen=True, slots=True)
class IssuedToken:
    """A new token: the secret, shown once, what the server keeps of it, and its
    principal's role (part of the token as it is shown)."""

    secret: str
    record: TokenRecord
    role: Role


class ScopesNotGranted(ScopesNotHeld):
    """Scopes an operator asked for that the principal may not hold. There is no calling
    token here, so the message speaks of the principal and says what it may hold."""

    def __init__(self, principal: Principal, refused: Sequence[str]) -> None:
        super().__init__(refused)
        held = ", ".join(sorted(principal.scopes)) or "none"
        refused_text = ", ".join(self.refused)
        self.message = f"principal {principal.principal_id} may not hold {refused_text} (it may hold: {held})"

    def __str__(self) -> str:
        return self.message


class TokenIssuer:
    def __init__(
        self, tokens_repo: TokenRepository, directory: DirectoryRepository, hasher: tokens.TokenHasher, clock: Clock
    ) -> None:
        self._tokens = tokens_repo
        self._directory = directory
        self._hash = hasher
        self._clock = clock

    async def issue(self, principal: Principal, ttl_seconds: int, scopes: Iterable[Scope] | None = None) -> IssuedToken:
        """An operator-issued token (the root token at initialisation): by
        default with every scope the principal may hold. It does not count
        against the principal's cap of minted tokens."""
        now = self._clock()
        record, secret = self._new(principal, scopes, now, now + ttl_seconds, pop_key_id="", minted=False)
        try:
            await self._tokens.add_token(record, Actor.operator(record.issued_at))
        except PrincipalDisabled:
            raise PrincipalIsDisabled(principal.principal_id) from None
        return IssuedToken(secret, record, principal.role)

    async def issue_for(
        self, principal_id: str, ttl_seconds: int, scopes: Iterable[Scope] | None = None
    ) -> IssuedToken:
        """The operator bootstrap: a token for the principal with that id; PrincipalNotFound
        without one, ScopesNotGranted for scopes it may not hold."""
        principal = await self._directory.get_principal(principal_id)
        if principal is None:
            raise PrincipalNotFound(principal_id)
        try:
            return await self.issue(principal, ttl_seconds, scopes)
        except ScopesNotHeld as error:
            raise ScopesNotGranted(principal, error.refused) from None

    async def mint(  # noqa: PLR0913 # what the new token is made of
        self,
        principal: Principal,
        scopes: Iterable[Scope],
        expires_at: int,
        pop_key_id: str,
        cap: int,
        *,
        by: Actor,
        request: RequestId | None = None,
    ) -> IssuedToken:
        """A token minted through the API from the token `parent_id`, unless the principal has
        `cap` live minted tokens; `by` is the call that mints it, whose token is the
        new token's parent. Refused when the parent was revoked, or the principal disabled,
        in the meantime: the store checks both in the transaction that adds the token. A
        request id the principal already minted with mints nothing: TokenAlreadyMinted."""
        record, secret = self._new(
            principal, scopes, by.at, expires_at, pop_key_id=pop_key_id, minted=True, parent=by.token_id
        )
        try:
            outcome = await self._tokens.add_minted_token(record, cap, by, request=request)
        except ParentRevoked:
            raise TokenRevoked from None
        except PrincipalDisabled:
            raise PrincipalIsDisabled(principal.principal_id) from None
        match outcome:
            case None:
                return IssuedToken(secret, record, principal.role)
            case int(first_expiry):
                msg = f"the principal already has {cap} active minted tokens"
                raise ActiveTokensExceeded(msg, first_expiry - record.issued_at, cap)
            case Repeated((token_id,)):
                raise TokenAlreadyMinted(token_id)
            case Reused():
                raise RequestIdReused
        msg = f"a mint's record names {outcome}, not one token"
        raise RuntimeError(msg)

    def _new(  # noqa: PLR0913 # what the new token is made of
        self,
        principal: Principal,
        scopes: Iterable[Scope] | None,
        now: int,
        expires_at: int,
        *,
        pop_key_id: str,
        minted: bool,
        parent: str = "",
    ) -> tuple[TokenRecord, str]:
        granted = principal.scopes if scopes is None else frozenset(scopes)
        if refused := granted - principal.scopes:
            raise ScopesNotHeld(sorted(refused))
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
            parent_token_id=parent,
        )
        return record, secret
