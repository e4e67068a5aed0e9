"""Request ids (AIP-155): the name a client gives one call it means to make, sent again,
unchanged, with every retry of it.

A write that succeeds with a request id leaves a record in the same transaction as its
change, keyed by the principal and the id: what the call asked (a fingerprint) and what it
answered. A repeat within RETENTION_SECONDS finds the record and answers the same, changing
nothing, however the state moved on since; the same id with another request is refused. A
call that fails records nothing, so its repeat runs again. Older records are ignored, and
forgotten by the purge of tombstones.

Not the `X-Request-Id` of the logs and the audit trail (Actor.request_id): that one names one
HTTP request; this one names a change across its retries.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

from zkplatform.domain.models import ItemChange

RETENTION_SECONDS = 24 * 60 * 60

# What a call answered, as recorded: a create's, an update's or a delete's change; the ids of
# the tokens a revocation revoked; the id of the token a mint minted (never its secret).
Answer = ItemChange | tuple[str, ...]
A = TypeVar("A", ItemChange, tuple[str, ...])


def oldest_kept(now: int) -> int:
    """The earliest time of a record that still answers a repeat at `now`: records are kept
    for less than RETENTION_SECONDS."""
    return now - RETENTION_SECONDS + 1


@dataclass(frozen=True, slots=True)
class RequestId:
    """A call's request id and the fingerprint of what it asks: two calls with one id are
    the same request when their fingerprints are equal. The fingerprint is made where the
    request is decoded (it covers the method and every field but the id), so a field added
    later is covered without the domain knowing of it."""

    value: str  # a UUID, lower-case
    fingerprint: bytes


@dataclass(frozen=True, slots=True)
class Repeated(Generic[A]):
    """The principal made a call with this request id and fingerprint within the retention
    period, and it succeeded: what it answered. Nothing was changed now."""

    answer: A


@dataclass(frozen=True, slots=True)
class Reused:
    """The principal made a call with this request id within the retention period, but it
    asked for something else: nothing was changed."""
