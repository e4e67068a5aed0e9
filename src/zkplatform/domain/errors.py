"""Errors the use cases raise. rpc/errors.py is the one place that maps them
to Connect codes and details; nothing here knows about the wire."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


class DomainError(Exception):
    """A refusal the caller can act on. Its message is safe to show them."""


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


class Unauthenticated(DomainError):
    """No usable credentials. The message names the failed check, never the token."""


class PermissionDenied(DomainError):
    """Authenticated, but not allowed to do this."""


class ScopesNotHeld(PermissionDenied):
    def __init__(self, refused: Sequence[str]) -> None:
        self.refused = tuple(sorted(refused))
        super().__init__("requested scopes are not held by the caller: " + ", ".join(self.refused))


class PrincipalIsDisabled(PermissionDenied):
    """The principal was disabled by an operator: it is issued and minted no token."""

    def __init__(self, principal_id: str) -> None:
        super().__init__(f"principal {principal_id} is disabled")


class KeyAccessDenied(PermissionDenied):
    """A revocation of another principal's recipient key by a caller that is neither an owner nor an admin."""

    def __init__(self, key_id: str) -> None:
        super().__init__(f"key {key_id} is another principal's: only an owner or an admin may revoke it")


class NotFound(DomainError):
    pass


class KeyNotFound(NotFound):
    """No recipient key of that id in the caller's tenant (another tenant's answers the same)."""

    def __init__(self, key_id: str) -> None:
        super().__init__(f"no key {key_id}")


class KeyExists(DomainError):
    """A publication of a key that another principal of the tenant has published already."""

    def __init__(self) -> None:
        super().__init__("another principal of the tenant has published this key")


class KeyRevoked(DomainError):
    """A publication of a key that was revoked: a revoked key stays revoked."""

    def __init__(self, key_id: str) -> None:
        super().__init__(f"key {key_id} was revoked and cannot be published again: make a new key pair")


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
    epoch than the store's (the store was restored from a backup since), or, with a
    `min_sequence`, below the vault's purge horizon (tombstones it has not seen were purged).
    Either way the client starts over with ListItems; `epoch` is the store's current one."""

    def __init__(self, epoch: str, min_sequence: int | None = None) -> None:
        if min_sequence is None:
            why = "the cursor is of another epoch than the store's (it was restored from a backup since)"
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
    """A rate limit or quota; retrying after `retry_after_seconds` may succeed."""

    def __init__(self, message: str, retry_after_seconds: int) -> None:
        super().__init__(message)
        self.retry_after_seconds = retry_after_seconds


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
