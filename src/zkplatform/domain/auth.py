"""Authentication (who is calling) and the checks every use case starts with."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import parse_qsl

from zkplatform.domain import tokens
from zkplatform.domain.clock import Clock
from zkplatform.domain.dpop import ProofRequest, verify_proof
from zkplatform.domain.errors import FieldViolation, InvalidArgument, PermissionDenied, Unauthenticated
from zkplatform.domain.models import Principal, Scope, TokenRecord, Vault
from zkplatform.repository import LimitsRepository, TokenRepository

log = logging.getLogger(__name__)

_SCHEMES = ("bearer", "dpop")  # RFC 6750; RFC 9449 for key-bound tokens


@dataclass(frozen=True, slots=True)
class Caller:
    """An authenticated call: the token it presented and the principal behind it."""

    token: TokenRecord
    principal: Principal
    secret: str  # the presented token itself, kept only for the DPoP `ath` check; never log it

    @property
    def tenant_id(self) -> str:
        return self.principal.tenant_id

    @property
    def scopes(self) -> frozenset[Scope]:
        """What this call may do: the token's scopes, still allowed for the principal."""
        return self.token.scopes & self.principal.scopes

    def require_scope(self, scope: Scope) -> None:
        if scope not in self.scopes:
            msg = f"the token lacks the scope {scope}"
            raise PermissionDenied(msg)

    def require_tenant(self, tenant_id: str) -> None:
        if tenant_id != self.tenant_id:
            raise PermissionDenied("the token belongs to another tenant")

    def require_member(self, vault: Vault | None) -> Vault:
        """The vault, if the caller is a member. A missing vault answers exactly
        like a vault of someone else, so the answer reveals nothing."""
        if vault is None or vault.tenant_id != self.tenant_id or self.principal.principal_id not in vault.members:
            raise PermissionDenied("the caller is not a member of this vault")
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

    async def refuse_tokens_in_query(self, query_string: str) -> None:
        """A token in a URL has leaked (logs, history, referrers): revoke it and refuse the call."""
        leaked = list(_tokens_in_query(query_string))
        if not leaked:
            return
        for _, value in leaked:
            if tokens.is_well_formed(value) and (record := await self._tokens.find_token(self._hash(value))):
                await self._tokens.revoke_token(record.secret_hash)
                log.warning("token %s was sent in a URL query and has been revoked", record.token_id)
        names = sorted({name for name, _ in leaked})
        raise InvalidArgument(
            [
                FieldViolation(
                    name, "a token must never be sent in the URL; it has been revoked, use the Authorization header"
                )
                for name in names
            ]
        )

    async def authenticate(self, authorization: str | None, proof: ProofRequest) -> Caller:
        """The caller, if the token is live and, when it is key-bound, the
        request carries a valid DPoP proof of that key."""
        secret = _credentials(authorization)
        if not tokens.is_well_formed(secret):
            raise _refused("malformed token")
        found = await self._tokens.find_token_with_principal(self._hash(secret))
        if found is None:
            raise _refused("unknown token")
        record, principal = found
        if record.revoked:
            raise _refused("token revoked", record)
        now = self._clock()
        if now >= record.expires_at:
            raise _refused("token expired", record)
        if record.pop_key_id:
            try:
                await verify_proof(
                    proof, key_thumbprint=record.pop_key_id, access_token=secret, now=now, replay=self._limits
                )
            except Unauthenticated as error:
                raise _refused(str(error), record) from None
        if principal.tenant_id != record.tenant_id:
            raise _refused("unknown token", record)
        return Caller(token=record, principal=principal, secret=secret)


def _refused(reason: str, record: TokenRecord | None = None) -> Unauthenticated:
    """The refusal, logged with the token's public id when there is one (never the token)."""
    log.info("authentication refused: %s%s", reason, f" (token {record.token_id})" if record else "")
    return Unauthenticated(reason)


def _credentials(authorization: str | None) -> str:
    if not authorization:
        raise Unauthenticated("missing Authorization header")
    scheme, _, value = authorization.strip().partition(" ")
    if scheme.lower() not in _SCHEMES or not value.strip():
        raise Unauthenticated("the Authorization header must be 'Bearer <token>'")
    return value.strip()


def _tokens_in_query(query_string: str) -> Iterable[tuple[str, str]]:
    for name, value in parse_qsl(query_string, keep_blank_values=True):
        if name == "access_token" or tokens.is_well_formed(value):
            yield name, value
