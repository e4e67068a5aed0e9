"""Errors the use cases raise. rpc/errors.py is the one place that maps them
to Connect codes and details; nothing here knows about the wire.

Each kind of refusal a client acts on differently is a class of its own (a
subclass of the refusal's general kind), which rpc/errors.py maps to its
ErrorInfo reason.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


class DomainError(Exception):
    """A refusal the caller can act on. Its message is safe to show them, and names no id the client
    chose (an item's, a device's, a key's, a token's: metadata carries what a client needs), since
    messages also go to spans and exception events, where an id holding a secret would stay. Only
    PrincipalNotFound, which the operator's commands share, names its principal."""


@dataclass(frozen=True, slots=True)
class FieldViolation:
    """One malformed field: its JSON path and what is wrong with it."""

    field: str
    description: str


class InvalidArgument(DomainError):
    def __init__(self, violations: Sequence[FieldViolation]) -> None:
        summary = "; ".join(f"{v.field}: {v.description}" if v.field else v.description for v in violations)
        super().__init__(f"invalid request: {summary}")
        self.violations = tuple(violations)


class PageTokenInvalid(InvalidArgument):
    """A page token this server did not issue for the listing, or one that was altered."""


class Unauthenticated(DomainError):
    """No usable credentials. The message names the failed check, never the token."""


class TokenMissing(Unauthenticated):
    """No Authorization header."""

    def __init__(self, message: str = "missing Authorization header") -> None:
        super().__init__(message)


class TokenInvalid(Unauthenticated):
    """A malformed or unknown token, or an Authorization header not of the form the token needs."""


class TokenExpired(Unauthenticated):
    def __init__(self) -> None:
        super().__init__("token expired")


class TokenRevoked(Unauthenticated):
    def __init__(self) -> None:
        super().__init__("token revoked")


class ProofInvalid(Unauthenticated):
    """A key-bound token without a valid DPoP proof of its key (missing, or failing a check)."""


class ProofReplayed(Unauthenticated):
    """A DPoP proof whose jti was already used within its window."""


class TokenOfDisabledPrincipal(Unauthenticated):
    """A token of a principal an operator disabled (its tokens were revoked with it)."""

    def __init__(self) -> None:
        super().__init__("principal disabled")


class PermissionDenied(DomainError):
    """Authenticated, but not allowed to do this."""


class ScopeMissing(PermissionDenied):
    """The call's scopes lack the one the operation needs."""

    def __init__(self, scope: str) -> None:
        super().__init__(f"the token lacks the scope {scope}")
        self.scope = scope


class TenantMismatch(PermissionDenied):
    def __init__(self) -> None:
        super().__init__("the token belongs to another tenant")


class VaultAccessDenied(PermissionDenied):
    """Not a member of the vault, a vault of another tenant, or no such vault: one answer for all."""

    def __init__(self) -> None:
        super().__init__("the caller is not a member of this vault")


class PrincipalAccessDenied(PermissionDenied):
    """Acting on another principal's tokens without the role it takes."""


class ScopesNotHeld(PermissionDenied):
    def __init__(self, refused: Sequence[str]) -> None:
        self.refused = tuple(sorted(refused))
        super().__init__("requested scopes are not held by the caller: " + ", ".join(self.refused))


class PrincipalIsDisabled(PermissionDenied):
    """The principal was disabled by an operator: it is issued and minted no token."""

    def __init__(self, principal_id: str) -> None:
        super().__init__(f"principal {principal_id} is disabled")


class KeyAccessDenied(PermissionDenied):
    """A reset of a principal's devices by a caller that is neither an owner nor an admin."""

    def __init__(self) -> None:
        super().__init__("only an owner or an admin of the tenant may reset a principal")


class NotFound(DomainError):
    pass


class ItemNotFound(NotFound):
    def __init__(self, vault_id: str, item_id: str) -> None:
        super().__init__("no such item in the vault")
        self.vault_id = vault_id
        self.item_id = item_id


class TokenNotFound(NotFound):
    """No such token, another tenant's, or one the caller may not act on: one answer for all."""

    def __init__(self, token_id: str) -> None:
        super().__init__("no such token")
        self.token_id = token_id


class PrincipalNotFound(NotFound):
    def __init__(self, principal_id: str) -> None:
        super().__init__(f"no principal {principal_id}")


class KeyNotFound(NotFound):
    """No device of that id of the caller's principal (another principal's or tenant's answers the same)."""

    def __init__(self, device_id: str) -> None:
        super().__init__("no such device of the caller's principal")
        self.device_id = device_id


class KeyExists(DomainError):
    """A publication of a signing or agreement key that another device of the tenant has."""

    def __init__(self) -> None:
        super().__init__("another device of the tenant has this signing or agreement key: make new keys")


class KeyRevoked(DomainError):
    """A publication of a key of a revoked device: a revoked key stays revoked."""

    def __init__(self, key_id: str) -> None:
        super().__init__("the key is a revoked device's and cannot be published again: make new keys")
        self.key_id = key_id


class SignatureInvalid(InvalidArgument):
    """A statement's signature (or endorsement) that does not verify with the key it must be made with."""

    def __init__(self, field: str, description: str) -> None:
        super().__init__([FieldViolation(field, description)])
        self.field = field


class EndorsementRequired(DomainError):
    """A first device published for a principal that has a live device: one of them endorses a new one."""

    def __init__(self) -> None:
        super().__init__(
            "the principal has a live device: a new device must name one of them as its endorser, with its endorsement"
        )


class EndorserNotLive(DomainError):
    """A device endorsed by a device that is not a live device of the principal."""

    def __init__(self, device_id: str) -> None:
        super().__init__("the endorser is not a live device of the principal")
        self.device_id = device_id


class RevokerNotLive(DomainError):
    """A revocation signed by a device that is not a live device of the principal."""

    def __init__(self, device_id: str) -> None:
        super().__init__("the revoker is not a live device of the principal")
        self.device_id = device_id


class VersionMismatch(DomainError):
    def __init__(self, current_version: int) -> None:
        super().__init__(f"the item is at version {current_version}")
        self.current_version = current_version


class ItemExists(DomainError):
    """A create for an id the vault already holds, other than a repeat of that very creation."""

    def __init__(self, current_version: int, deleted: bool) -> None:  # the shape the RPC layer reads
        state = "deleted" if deleted else "live"
        super().__init__(f"the item already exists ({state}, at version {current_version})")
        self.current_version = current_version
        self.deleted = deleted


class ItemDeleted(DomainError):
    """A change of an item that is a tombstone: it can no longer change."""

    def __init__(self) -> None:
        super().__init__("the item is deleted")


class CursorExpired(DomainError):
    """A cursor (or a ListItems page token) the store can no longer continue from: of another
    epoch than the store's (the store was restored from a backup since, or the cursor is another
    store's, such as an earlier development server's), or, with a
    `min_sequence`, below the vault's purge horizon (tombstones it has not seen were purged).
    Either way the client starts over with ListItems; `epoch` is the store's current one."""

    def __init__(self, epoch: str, min_sequence: int | None = None) -> None:
        if min_sequence is None:
            why = (
                "the cursor is of another epoch than the store's: the store was restored from a backup since,"
                " or the cursor is of another store (a development server starts a new one each time)"
            )
        else:
            why = f"the cursor is older than the vault's purged tombstones; the lowest accepted is {min_sequence}"
        super().__init__(f"{why}: start over with ListItems")
        self.epoch = epoch
        self.min_sequence = min_sequence


class CursorAhead(DomainError):
    """A changes cursor beyond the vault's latest change: of another vault, or from before a restore."""

    def __init__(self, current_sequence: int) -> None:
        super().__init__(f"the cursor is ahead of the vault, which is at sequence {current_sequence}")
        self.current_sequence = current_sequence


class WatchBehind(DomainError):
    """A watch whose client reads too slowly to keep up; it resumes from its last cursor."""

    def __init__(self) -> None:
        super().__init__("the client fell too far behind the vault's changes; resume from the last cursor received")


class ParentExpiresSoon(DomainError):
    """The calling token expires before the shortest lifetime a new token may have."""


class LimitReached(DomainError):
    """A rate limit or quota of `limit`; retrying after `retry_after_seconds` may succeed."""

    def __init__(self, message: str, retry_after_seconds: int, limit: int) -> None:
        super().__init__(message)
        self.retry_after_seconds = retry_after_seconds
        self.limit = limit


class MintRateExceeded(LimitReached):
    """The principal's mint attempts of the last minute reached `limit`."""


class ActiveTokensExceeded(LimitReached):
    """The principal holds `limit` live minted tokens already."""


class WatchesExceeded(LimitReached):
    """Open watches at their `limit`, per principal (`per_principal`) or per server."""

    def __init__(self, message: str, retry_after_seconds: int, limit: int, *, per_principal: bool) -> None:
        super().__init__(message, retry_after_seconds, limit)
        self.per_principal = per_principal


class StoreUnavailable(DomainError):
    """The store cannot be reached now (down, refusing connections, a connection that cannot be made
    in time, locked); nothing was changed, and trying again later may succeed. The adapters raise it
    in place of their driver's errors of that kind, having logged the cause; its message is the same
    for every cause."""

    def __init__(self) -> None:
        super().__init__("the store is unavailable; try again later")


class StoreBusy(DomainError):
    """Every connection to the store stayed in use by other calls for as long as a call may wait:
    overload, not an outage (the store answers, so readiness does not follow it). Nothing was
    changed; trying again shortly, or on another server, may succeed."""

    def __init__(self) -> None:
        super().__init__("the server is busy; try again shortly")


class TokenMisplaced(InvalidArgument):
    """Tokens where none belongs, in a field of a request message (`violations` name where, never
    the token): they have leaked, and are revoked before this is raised."""


class RequestIdReused(InvalidArgument):
    """A request id the principal used within the retention period for another request."""

    def __init__(self) -> None:
        super().__init__(
            [FieldViolation("requestId", "was used within the last 24 hours for another request; make a new one")]
        )


class TokenAlreadyMinted(DomainError):
    """A mint repeated with the request id of one that minted a token: the secret was shown once and
    is not kept, so the repeat can only name the token."""

    def __init__(self, token_id: str) -> None:
        super().__init__(
            f"this request id already minted token {token_id}: revoke or list it, and mint with a new request id"
        )
        self.token_id = token_id
