"""Authentication (who is calling) and the checks every use case starts with."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass

from zkplatform.domain import tokens
from zkplatform.domain.audit import Action, Actor, ActorKind
from zkplatform.domain.clock import Clock
from zkplatform.domain.dpop import ProofRequest, verify_proof
from zkplatform.domain.errors import (
    ProofInvalid,
    ScopeMissing,
    TenantMismatch,
    TokenExpired,
    TokenInvalid,
    TokenOfDisabledPrincipal,
    TokenRevoked,
    Unauthenticated,
    VaultAccessDenied,
)
from zkplatform.domain.models import Principal, Scope, TokenRecord, Vault
from zkplatform.domain.ports.limits import LimitsRepository
from zkplatform.domain.ports.tokens import TokenRepository

log = logging.getLogger(__name__)
# Values of a line's own go in extra={"fields": ...}: keys of their own in the JSON log.

# How fresh a token's recorded last use is kept: it is written when the stored value is
# this much older than the call (or missing), so a token in steady use costs one write a
# minute whatever its call rate, and authentication stays a read for every other call.
LAST_USE_RESOLUTION_SECONDS = 60


@dataclass(frozen=True, slots=True)
class Presented:
    """A token as the request presented it: `Authorization: Bearer` (RFC 6750) or,
    for a key-bound token, `Authorization: DPoP` (RFC 9449)."""

    token: str
    dpop_scheme: bool

    def __repr__(self) -> str:
        return f"Presented(dpop_scheme={self.dpop_scheme})"  # never the token


@dataclass(frozen=True, slots=True)
class Caller:
    """An authenticated call: the token it presented and the principal behind it."""

    token: TokenRecord
    principal: Principal
    secret: str  # the presented token itself, kept only for the DPoP `ath` check; never log it
    request_id: str = ""
    client_address: str = ""  # the IP address the call came from (a trusted proxy's forwarded one)

    def actor(self, at: int) -> Actor:
        """The caller as the author of a change made at `at`, for the audit trail."""
        return Actor(
            ActorKind.PRINCIPAL,
            at,
            self.principal.principal_id,
            self.token.token_id,
            self.request_id,
            self.client_address,
        )

    @property
    def tenant_id(self) -> str:
        return self.principal.tenant_id

    @property
    def scopes(self) -> frozenset[Scope]:
        """What this call may do: the token's scopes, still allowed for the principal."""
        return self.token.scopes & self.principal.scopes

    def require_scope(self, scope: Scope) -> None:
        # Asked of each set, not of `scopes`, which builds their intersection: every use case asks.
        if scope not in self.token.scopes or not self.principal.may_hold(scope):
            raise ScopeMissing(scope)

    def require_tenant(self, tenant_id: str) -> None:
        if tenant_id != self.tenant_id:
            raise TenantMismatch

    def require_member(self, vault: Vault | None) -> Vault:
        """The vault, if the caller is a member. A missing vault answers exactly
        like a vault of someone else, so the answer reveals nothing."""
        if vault is None or vault.tenant_id != self.tenant_id or self.principal.principal_id not in vault.members:
            raise VaultAccessDenied
        return vault


class Authenticator:
    def __init__(
        self,
        tokens_repo: TokenRepository,
        limits: LimitsRepository,
        hasher: tokens.TokenHasher,
        clock: Clock,
    ) -> None:
        self._tokens = tokens_repo
        self._limits = limits
        self._hash = hasher
        self._clock = clock

    async def revoke_leaked(
        self, leaked: Iterable[str], request_id: str = "", client_address: str = "", where: str = "in a URL"
    ) -> None:
        """Tokens seen where they must never be (a URL: logs, history, referrers; a request id or a
        field of a request, which are logged, traced and stored) are revoked; `where` says which, in
        the log lines. The audit event is `token.revoked_in_url` wherever it was.

        Never raises: the request that carried them is refused the same way whatever happens here.
        When the audited revocation fails (the audit store refuses its event), the token is revoked
        without its event, and an error line names the token's id: a leaked token left live is
        worse than a gap in the trail, and the line says where the gap is."""
        for token in leaked:
            try:
                await self._revoke_leaked(token, Actor.service(self._clock(), request_id, client_address), where)
            except Exception as error:  # noqa: BLE001 # the refusal must go out whatever the store does
                # One line, no traceback: a driver's message may quote what it was given.
                log.error("a token sent %s could not be revoked: the store failed (%s)", where, type(error).__name__)  # noqa: TRY400

    async def _revoke_leaked(self, token: str, actor: Actor, where: str) -> None:
        record = await self._tokens.find_token(self._hash(token))
        if record is None or record.revoked:
            return
        # With its whole tree: whoever holds the leaked token could have minted from it.
        try:
            revoked = await self._tokens.revoke_token_tree(record.token_id, actor, Action.TOKEN_REVOKED_IN_URL)
        except Exception as error:  # noqa: BLE001 # whichever store and driver: any failure of the audited write
            revoked = await self._tokens.revoke_token_tree(
                record.token_id, actor, Action.TOKEN_REVOKED_IN_URL, audited=False
            )
            log.error(  # noqa: TRY400 # one line, as above
                "a token sent %s has been revoked without its audit event"
                " (the audit write failed: %s); the trail has no record of this revocation",
                where,
                type(error).__name__,
                extra={"fields": {"token_id": record.token_id}},
            )
        log.warning(
            "a token sent %s has been revoked, with %d token(s) minted from it",
            where,
            max(len(revoked or []) - 1, 0),
            extra={"fields": {"token_id": record.token_id}},
        )

    async def authenticate(
        self, presented: Presented, proof: ProofRequest, request_id: str = "", client_address: str = ""
    ) -> Caller:
        """The caller, if the token is live and, when it is key-bound, presented
        with the DPoP scheme and a valid proof of that key."""
        secret = presented.token
        # Looked up first, its shape checked only when it is not found: a stored token is well
        # formed (the server made it), so a live one skips the checksum. The length bounds the HMAC.
        found = None
        if len(secret) == tokens.TOKEN_LENGTH:
            found = await self._tokens.find_token_with_principal(self._hash(secret))
        if found is None:
            raise _refused(TokenInvalid("unknown token" if tokens.is_well_formed(secret) else "malformed token"))
        record, principal = found
        if record.revoked:
            raise _refused(TokenRevoked(), record)
        now = self._clock()
        if now >= record.expires_at:
            raise _refused(TokenExpired(), record)
        if record.pop_key_id:
            if not presented.dpop_scheme:  # RFC 9449 section 7.2: a bound token is never a bearer token
                raise _refused(ProofInvalid("a key-bound token must be sent as 'Authorization: DPoP <token>'"), record)
            try:
                await verify_proof(
                    proof, key_thumbprint=record.pop_key_id, access_token=secret, now=now, replay=self._limits
                )
            except Unauthenticated as error:
                raise _refused(error, record) from None
        if principal.tenant_id != record.tenant_id:
            raise _refused(TokenInvalid("unknown token"), record)
        if principal.disabled:  # its tokens were revoked with it; this holds even for one that slipped by
            raise _refused(TokenOfDisabledPrincipal(), record)
        await self._note_use(record, now)
        return Caller(
            token=record, principal=principal, secret=secret, request_id=request_id, client_address=client_address
        )

    async def _note_use(self, record: TokenRecord, now: int) -> None:
        """Record the token's last use, when the recorded one is a minute old: a write at most once
        a minute per token, and one the call does not wait for (the store's touch_token returns
        before its write is done). The token just read carries the recorded value, so deciding
        costs nothing."""
        if record.last_used_at is None or now - record.last_used_at >= LAST_USE_RESOLUTION_SECONDS:
            await self._tokens.touch_token(record.token_id, now, now - LAST_USE_RESOLUTION_SECONDS + 1)


def _refused(refusal: Unauthenticated, record: TokenRecord | None = None) -> Unauthenticated:
    """The refusal, logged with the token's public id when there is one (never the token)."""
    log.info("authentication refused: %s", refusal, extra={"fields": {"token_id": record.token_id}} if record else None)
    return refusal
