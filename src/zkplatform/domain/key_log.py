"""The key log: each tenant's append-only record of its keys' publications and revocations.

It is chained as the audit trail is (domain/audit.py), with the same hash and the same
starting point:

    hash(n) = SHA-256(hash(n - 1) || canonical bytes of entry n),  hash(0) = 32 zero bytes

but, unlike the audit trail, clients read it (DirectoryService.ListKeyLog) and recompute
it, so its canonical bytes are part of the contract (directory.proto, KeyLogEntry): the
compact UTF-8 JSON, keys sorted, of the entry's action (the enum value's name), its JWK
(as an object), its key id, principal id, tenant id and time (Unix seconds). A store keeps
those exact bytes with their hash; what a client is answered is read back from them.

The store appends an entry in the same transaction as the key's change, and moves the
tenant's head (size, hash) there too, so that concurrent changes queue on the head and
the chain never forks.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from zkplatform.domain.audit import GENESIS, chain
from zkplatform.domain.recipient_keys import RecipientKey


class KeyLogAction(StrEnum):
    # The names of platform.v1.KeyLogAction's values: what the canonical bytes hold.
    PUBLISHED = "KEY_LOG_ACTION_PUBLISHED"
    REVOKED = "KEY_LOG_ACTION_REVOKED"


@dataclass(frozen=True, slots=True)
class KeyLogEntry:
    """What one entry records: a key published or revoked, and when (Unix seconds)."""

    action: KeyLogAction
    tenant_id: str
    principal_id: str
    key_id: str
    jwk: str  # the key's canonical JWK text (recipient_keys.py)
    time: int

    @classmethod
    def published(cls, key: RecipientKey) -> KeyLogEntry:
        return cls(KeyLogAction.PUBLISHED, key.tenant_id, key.principal_id, key.key_id, key.jwk, key.created_at)

    @classmethod
    def revoked(cls, key: RecipientKey) -> KeyLogEntry:
        assert key.revoked_at is not None  # a revocation's entry is made of the revoked key
        return cls(KeyLogAction.REVOKED, key.tenant_id, key.principal_id, key.key_id, key.jwk, key.revoked_at)

    def canonical(self) -> bytes:
        document = {
            "action": self.action.value,
            "jwk": json.loads(self.jwk),
            "keyId": self.key_id,
            "principalId": self.principal_id,
            "tenantId": self.tenant_id,
            "time": self.time,
        }
        return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()

    @classmethod
    def read(cls, data: bytes) -> KeyLogEntry:
        """The entry whose canonical bytes these are; UnreadableEntry for anything else."""
        try:
            document = json.loads(data)
            entry = cls(
                KeyLogAction(document["action"]),
                _text(document["tenantId"]),
                _text(document["principalId"]),
                _text(document["keyId"]),
                json.dumps(document["jwk"], sort_keys=True, separators=(",", ":")),
                _integer(document["time"]),
            )
        except (ValueError, KeyError, TypeError, UnicodeDecodeError):
            raise UnreadableEntry from None
        if entry.canonical() != data:
            raise UnreadableEntry
        return entry


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError
    return value


def _integer(value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError
    return value


class UnreadableEntry(ValueError):
    """Stored bytes that are not the canonical bytes of an entry: written behind the store's back."""


@dataclass(frozen=True, slots=True)
class KeyLogHead:
    """The end of a tenant's log: how many entries it has, and the last one's hash."""

    size: int
    hash: bytes


EMPTY = KeyLogHead(0, GENESIS)


@dataclass(frozen=True, slots=True)
class KeyLogRecord:
    """An entry as stored: its place in the tenant's log, its canonical bytes and its hash."""

    tenant_id: str
    index: int
    data: bytes
    hash: bytes

    @property
    def entry(self) -> KeyLogEntry:
        return KeyLogEntry.read(self.data)

    @property
    def head(self) -> KeyLogHead:
        """The head of the log that ends with this entry."""
        return KeyLogHead(self.index, self.hash)


def appended(head: KeyLogHead, tenant_id: str, entries: Iterable[KeyLogEntry]) -> Iterator[KeyLogRecord]:
    """The records that continue the tenant's log from `head` with `entries`."""
    index, previous = head.size, head.hash
    for entry in entries:
        index += 1
        data = entry.canonical()
        previous = chain(previous, data)
        yield KeyLogRecord(tenant_id, index, data, previous)


@dataclass(frozen=True, slots=True)
class Break:
    """Where a tenant's key log stops matching what is stored."""

    tenant_id: str
    index: int
    reason: str

    def __str__(self) -> str:
        return f"tenant {self.tenant_id}: key log entry {self.index} {self.reason}"


class KeyLogCheck:
    """Recomputes one tenant's key log from its first entry, record by record, in index order."""

    def __init__(self, tenant_id: str) -> None:
        self.tenant_id = tenant_id
        self.head = EMPTY

    def check(self, record: KeyLogRecord) -> Break | None:
        expected = self.head.size + 1
        if record.index < 1:
            return Break(self.tenant_id, record.index, "is numbered below 1, where no entry can be")
        if record.index != expected:
            return Break(self.tenant_id, expected, "is missing")
        if chain(self.head.hash, record.data) != record.hash:
            return Break(self.tenant_id, expected, "does not match its hash (edited, or an earlier entry was)")
        try:
            entry = record.entry
        except UnreadableEntry:
            return Break(self.tenant_id, expected, "is not an entry in canonical form")
        if entry.tenant_id != self.tenant_id:
            return Break(self.tenant_id, expected, f"names another tenant ({entry.tenant_id})")
        self.head = record.head
        return None

    def finish(self, head: KeyLogHead) -> Break | None:
        """The log must end where the store's head says: entries removed from its end are found too."""
        if head.size > self.head.size:
            return Break(self.tenant_id, self.head.size + 1, f"is missing (the log's head is at {head.size})")
        if head.size < self.head.size:
            return Break(self.tenant_id, head.size + 1, "was added after the log's head")
        if head.hash != self.head.hash:
            return Break(self.tenant_id, self.head.size, "does not match the log's head")
        return None
