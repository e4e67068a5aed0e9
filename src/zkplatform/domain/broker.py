"""Minting API tokens: least privilege, bounded lifetime, optional key binding."""

from __future__ import annotations

from dataclasses import dataclass

from zkplatform.domain.auth import Caller
from zkplatform.domain.clock import Clock
from zkplatform.domain.dpop import ProofRequest, verify_proof
from zkplatform.domain.errors import FieldViolation, InvalidArgument, MintRateExceeded, ParentExpiresSoon, ScopesNotHeld
from zkplatform.domain.issuing import IssuedToken, TokenIssuer
from zkplatform.domain.models import Scope
from zkplatform.domain.ports.limits import LimitsRepository
from zkplatform.domain.request_ids import RequestId
from zkplatform.domain.token_management import TokenManagement

RATE_WINDOW_SECONDS = 60


@dataclass(frozen=True, slots=True)
class MintPolicy:
    """Operator-configurable bounds of minting."""

    default_ttl_seconds: int = 900
    min_ttl_seconds: int = 60
    max_ttl_seconds: int = 3600
    mints_per_minute: int = 10
    active_minted_cap: int = 50

    def __post_init__(self) -> None:
        if not 0 < self.min_ttl_seconds <= self.default_ttl_seconds <= self.max_ttl_seconds:
            msg = "token lifetimes must satisfy 0 < minimum <= default <= maximum"
            raise ValueError(msg)
        if self.mints_per_minute < 1 or self.active_minted_cap < 1:
            msg = "the mint rate and the active token cap must be at least 1"
            raise ValueError(msg)


@dataclass(frozen=True, slots=True)
class MintRequest:
    tenant_id: str
    scopes: tuple[Scope, ...]
    ttl_seconds: int  # 0: the default
    pop_key_id: str  # "": unbound, or inherited from a bound caller
    proof: ProofRequest
    request_id: RequestId | None = None  # a repeat of a mint with it mints nothing: TokenAlreadyMinted


@dataclass(frozen=True, slots=True)
class MintAttempt:
    """A counted attempt; `retry_after` is set when it went over the rate."""

    retry_after: int | None


class BrokerUseCases:
    def __init__(
        self,
        limits: LimitsRepository,
        issuer: TokenIssuer,
        policy: MintPolicy,
        clock: Clock,
        management: TokenManagement,
    ) -> None:
        self._limits = limits
        self._issuer = issuer
        self._policy = policy
        self._clock = clock
        self.management = management  # ListTokens and RevokeToken, the service's other two RPCs

    async def count_attempt(self, caller: Caller) -> MintAttempt:
        """Every authenticated attempt counts, refused or not, so probing is limited too."""
        retry_after = await self._limits.record_mint_attempt(
            caller.principal.principal_id, self._clock(), RATE_WINDOW_SECONDS, self._policy.mints_per_minute
        )
        return MintAttempt(retry_after)

    async def mint(self, caller: Caller, request: MintRequest, attempt: MintAttempt) -> IssuedToken:
        """Checks in the contract's order: key proof, fields, scope and tenant,
        scopes held, parent expiry, then the limits."""
        pop_key_id = await self._binding(caller, request)
        ttl = self._ttl(request.ttl_seconds)
        caller.require_scope(Scope.BROKER_TOKENS_MINT)
        caller.require_tenant(request.tenant_id)
        scopes = frozenset(request.scopes)
        if refused := scopes - caller.scopes:
            raise ScopesNotHeld(sorted(refused))
        now = self._clock()
        expires_at = min(now + ttl, caller.token.expires_at)
        if expires_at - now < self._policy.min_ttl_seconds:
            msg = (
                f"the calling token expires in {caller.token.expires_at - now} s,"
                f" sooner than the shortest lifetime of a token ({self._policy.min_ttl_seconds} s)"
            )
            raise ParentExpiresSoon(msg)
        if attempt.retry_after is not None:
            msg = f"at most {self._policy.mints_per_minute} mint attempts a minute"
            raise MintRateExceeded(msg, attempt.retry_after, self._policy.mints_per_minute)
        return await self._issuer.mint(
            caller.principal,
            scopes,
            expires_at,
            pop_key_id,
            self._policy.active_minted_cap,
            by=caller.actor(now),
            request=request.request_id,
        )

    async def _binding(self, caller: Caller, request: MintRequest) -> str:
        """The new token's key: a bound caller's children keep its key (its
        proof was checked at authentication and covers this call); an unbound
        caller binding a new token proves possession of that key here."""
        parent_key = caller.token.pop_key_id
        if parent_key:
            if request.pop_key_id not in ("", parent_key):
                raise InvalidArgument(
                    [
                        FieldViolation(
                            "popKeyId", "a child of a bound token is bound to the same key: omit it or repeat it"
                        )
                    ]
                )
            return parent_key
        if request.pop_key_id:
            await verify_proof(
                request.proof,
                key_thumbprint=request.pop_key_id,
                access_token=caller.secret,
                now=self._clock(),
                replay=self._limits,
            )
        return request.pop_key_id

    def _ttl(self, requested: int) -> int:
        policy = self._policy
        if requested == 0:
            return policy.default_ttl_seconds
        if not policy.min_ttl_seconds <= requested <= policy.max_ttl_seconds:
            description = (
                f"must be between {policy.min_ttl_seconds} and {policy.max_ttl_seconds} seconds,"
                f" or 0 for the default of {policy.default_ttl_seconds}"
            )
            raise InvalidArgument([FieldViolation("requestedTtlSeconds", description)])
        return requested
