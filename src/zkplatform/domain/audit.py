"""The audit trail: who changed what, when, and in which request.

Every change of state appends an event to its tenant's trail in the same
transaction as the change (the store does it), so a change whose event cannot be
written does not happen. Each tenant's events form a hash chain:

    hash(n) = SHA-256(hash(n - 1) || canonical bytes of event n),  hash(0) = 32 zero bytes

An event edited or removed after the fact no longer matches the chain from
there on. The canonical bytes are the event as compact UTF-8 JSON with sorted
keys: time, actor, action, target, request id and the client's IP address. Its
tenant and sequence number are the chain it is in and its place there, which the
hashes already fix, so the bytes can be made before the store knows either. An
event names ids only (and the address, and a principal's scopes when an operator
changes them): never a token, a payload, a title hash or a wrapped key.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from zkplatform.domain.models import Item, Principal, Vault

GENESIS = bytes(32)  # the hash before a tenant's first event


class ActorKind(StrEnum):
    PRINCIPAL = "principal"  # a call authenticated with one of the principal's tokens
    OPERATOR = "operator"  # `zkplatform admin`
    SERVICE = "service"  # the service on its own: a token seen in a URL, tombstones purged on schedule


class Action(StrEnum):
    # ruff's S105 takes the TOKEN_* names for passwords: they name actions.
    TENANT_ADDED = "tenant.added"
    PRINCIPAL_ADDED = "principal.added"
    PRINCIPAL_DISABLED = "principal.disabled"
    PRINCIPAL_ENABLED = "principal.enabled"
    PRINCIPAL_SCOPES_CHANGED = "principal.scopes_changed"  # its grant, as it was and as it is
    VAULT_ADDED = "vault.added"
    VAULT_MEMBER_ADDED = "vault.member_added"
    VAULT_MEMBER_REMOVED = "vault.member_removed"
    ITEM_CREATED = "item.created"
    ITEM_UPDATED = "item.updated"
    ITEM_DELETED = "item.deleted"
    ITEM_PURGED = "item.purged"  # a tombstone forgotten
    TOKEN_ISSUED = "token.issued"  # noqa: S105 # by the operator
    TOKEN_MINTED = "token.minted"  # noqa: S105
    TOKEN_REVOKED = "token.revoked"  # noqa: S105
    TOKEN_REVOKED_IN_URL = "token.revoked_in_url"  # noqa: S105 # the tree of a token that was sent in a URL
    KEY_PUBLISHED = "key.published"  # a recipient key of the first key directory: kept to read older trails
    KEY_REVOKED = "key.revoked"
    DEVICE_PUBLISHED = "device.published"  # a device's keys, appended to its tenant's key log
    DEVICE_REVOKED = "device.revoked"  # by a device's signed statement
    PRINCIPAL_RESET = "principal.reset"  # every device of a principal revoked, under the log key
    # The store's epoch replaced (after a restore from a backup): in every tenant's trail.
    EPOCH_ROTATED = "store.epoch_rotated"


@dataclass(frozen=True, slots=True)
class Actor:
    """Who makes a change, when (Unix seconds), in which request and from which IP address
    (the client's: behind a trusted proxy, the one it forwarded; "" without a request):
    what each of the change's events records of its cause."""

    kind: ActorKind
    at: int
    principal_id: str = ""
    token_id: str = ""
    request_id: str = ""
    client_address: str = ""

    @classmethod
    def operator(cls, at: int) -> Actor:
        return cls(ActorKind.OPERATOR, at)

    @classmethod
    def service(cls, at: int, request_id: str = "", client_address: str = "") -> Actor:
        return cls(ActorKind.SERVICE, at, request_id=request_id, client_address=client_address)

    def event(self, tenant_id: str, action: Action, **target: str) -> Event:
        return Event(tenant_id, self, action, tuple(sorted(target.items())))

    def event_bytes(self, action: Action, **target: str) -> bytes:
        """The canonical bytes of an event whose tenant the store finds itself (the bytes
        never hold the tenant: the chain they are appended to does)."""
        return self.event("", action, **target).canonical()


@dataclass(frozen=True, slots=True)
class Event:
    """One change, before the store gives it its place in the tenant's chain."""

    tenant_id: str
    actor: Actor
    action: Action
    target: tuple[tuple[str, str], ...]  # (kind, id) pairs, e.g. ("item", ...), ("vault", ...)

    def canonical(self) -> bytes:
        # What json.dumps(..., sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        # makes of the event, written out in that order (tests/unit/test_audit.py checks
        # they agree): it runs inside each change's transaction, and the encoder object
        # the json module builds per call cost more than the rest of the event.
        actor = self.actor
        if actor.kind is ActorKind.PRINCIPAL:
            who = f'"kind":"principal","principal":{_quote(actor.principal_id)},"token":{_quote(actor.token_id)}'
        else:
            who = f'"kind":{_quote(actor.kind.value)}'
        target = ",".join(f"{_quote(kind)}:{_quote(id_)}" for kind, id_ in self.target)  # sorted by Actor.event
        return (
            f'{{"action":{_quote(self.action.value)},"actor":{{{who}}},'
            f'"clientAddress":{_quote(actor.client_address)},"requestId":{_quote(actor.request_id)},'
            f'"target":{{{target}}},"time":{int(actor.at)}}}'
        ).encode()


_quote: Callable[[str], str] = json.encoder.encode_basestring  # the C one, as json.dumps uses


def item_event(actor: Actor, action: Action, item: Item) -> Event:
    return actor.event(item.tenant_id, action, vault=item.vault_id, item=item.item_id)


def key_event(actor: Actor, action: Action, tenant_id: str, principal_id: str, key_id: str) -> Event:
    """A recipient key published or revoked: the key's id (its thumbprint: public) and whose it is."""
    return actor.event(tenant_id, action, principal=principal_id, key=key_id)


def vault_events(actor: Actor, vault: Vault) -> list[Event]:
    """A vault added, and each of the members it starts with."""
    return [
        actor.event(vault.tenant_id, Action.VAULT_ADDED, vault=vault.vault_id),
        *(
            actor.event(vault.tenant_id, Action.VAULT_MEMBER_ADDED, vault=vault.vault_id, principal=member)
            for member in sorted(vault.members)
        ),
    ]


def revoke_events(actor: Actor, action: Action, tenant_id: str, root: str, revoked: Iterable[str]) -> list[Event]:
    """One event per token a revocation revoked, each naming the token it was asked for."""
    return [actor.event(tenant_id, action, token=token_id, root=root) for token_id in revoked]


def disable_events(
    actor: Actor, tenant_id: str, principal_id: str, revoked: Iterable[str], *, disabled: bool
) -> list[Event]:
    """A principal disabled (with each of its tokens revoked then) or enabled."""
    action = Action.PRINCIPAL_DISABLED if disabled else Action.PRINCIPAL_ENABLED
    return [
        actor.event(tenant_id, action, principal=principal_id),
        *(actor.event(tenant_id, Action.TOKEN_REVOKED, token=t, root=t) for t in revoked),
    ]


def scopes_event(actor: Actor, before: Principal, after: Principal) -> Event:
    """A principal's grant changed by an operator: the scopes it was granted and is granted now,
    each sorted and comma-separated as `zkplatform admin principal scopes` takes them."""
    return actor.event(
        after.tenant_id,
        Action.PRINCIPAL_SCOPES_CHANGED,
        principal=after.principal_id,
        scopesBefore=",".join(sorted(before.allowed_scopes)),
        scopesAfter=",".join(sorted(after.allowed_scopes)),
    )


def epoch_events(actor: Actor, tenant_ids: Iterable[str], epoch: str) -> list[Event]:
    """The store's epoch replaced by `epoch`: one event in each tenant's trail, since each
    tenant's cursors start over with it."""
    return [actor.event(tenant_id, Action.EPOCH_ROTATED, epoch=epoch) for tenant_id in tenant_ids]


def chain(previous: bytes, event: bytes) -> bytes:
    return hashlib.sha256(previous + event).digest()


@dataclass(frozen=True, slots=True)
class AuditRecord:
    """An event as stored: its tenant, its place in the tenant's chain, its bytes and its hash."""

    tenant_id: str
    sequence: int
    event: bytes
    hash: bytes

    def exported(self) -> dict[str, Any]:
        """The record as one line of an export: the event's fields, its sequence and its hash (hex)."""
        return {"tenant": self.tenant_id, "sequence": self.sequence, **json.loads(self.event), "hash": self.hash.hex()}


@dataclass(frozen=True, slots=True)
class Head:
    """The end of a tenant's chain as the store last wrote it."""

    tenant_id: str
    sequence: int
    hash: bytes


def by_tenant(events: Iterable[Event]) -> list[tuple[str, list[Event]]]:
    """The events grouped by tenant, tenants sorted, each tenant's in the order given: a
    transaction appends to its tenants' chains in this order, so that two transactions
    that lock the same chains' heads lock them in the same order."""
    grouped: dict[str, list[Event]] = {}
    for event in events:
        grouped.setdefault(event.tenant_id, []).append(event)
    return sorted(grouped.items())


def appended(head: Head | None, tenant_id: str, events: Iterable[Event]) -> Iterator[AuditRecord]:
    """The records that continue the tenant's chain from `head` (None: no event yet) with `events`."""
    sequence, previous = (0, GENESIS) if head is None else (head.sequence, head.hash)
    for event in events:
        sequence += 1
        data = event.canonical()
        previous = chain(previous, data)
        yield AuditRecord(tenant_id, sequence, data, previous)


# Below every sequence a store can hold (its columns are 64-bit integers): the events "after"
# it are all of a tenant's events, those numbered 0 or below included, which no store writes
# but which verify must see if someone else did.
BEFORE_ALL = -(2**63)

_KINDS = {str: "text", int: "an integer", float: "a real number", type(None): "NULL"}


class UnreadableRecord(Exception):
    """A stored event or chain head whose columns do not hold what the trail stores (an integer
    sequence, bytes for the event and its hash): changed behind the store's back."""

    def __init__(self, tenant_id: object, what: str, column: str, value: object, expected: str) -> None:
        kind = _KINDS.get(type(value), type(value).__name__)
        super().__init__(f"tenant {tenant_id}: {what} cannot be read: its {column} holds {kind}, not {expected}")


@dataclass(frozen=True, slots=True)
class Break:
    """Where a tenant's chain stops matching what is stored."""

    tenant_id: str
    sequence: int
    reason: str

    def __str__(self) -> str:
        return f"tenant {self.tenant_id}: event {self.sequence} {self.reason}"


class ChainCheck:
    """Recomputes one tenant's chain from its first event, record by record, in sequence order."""

    def __init__(self, tenant_id: str) -> None:
        self.tenant_id = tenant_id
        self.sequence = 0
        self._previous = GENESIS

    def check(self, record: AuditRecord) -> Break | None:
        expected = self.sequence + 1
        if record.sequence < 1:  # read first, in sequence order: before the chain's first event
            return Break(self.tenant_id, record.sequence, "is numbered below 1, where no event can be")
        if record.sequence != expected:
            return Break(self.tenant_id, expected, "is missing")
        if chain(self._previous, record.event) != record.hash:
            return Break(self.tenant_id, expected, "does not match its hash (edited, or an earlier event was)")
        self.sequence, self._previous = expected, record.hash
        return None

    def finish(self, head: Head | None) -> Break | None:
        """The chain must end where the store last wrote it: events removed from its end are found too."""
        if head is None:
            return None if self.sequence == 0 else Break(self.tenant_id, self.sequence, "has no chain head")
        if head.sequence > self.sequence:
            return Break(self.tenant_id, self.sequence + 1, f"is missing (the chain's head is at {head.sequence})")
        if head.sequence < self.sequence:
            return Break(self.tenant_id, head.sequence + 1, "was added after the chain's head")
        if head.hash != self._previous:
            return Break(self.tenant_id, self.sequence, "does not match the chain's head")
        return None
