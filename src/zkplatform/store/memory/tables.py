"""The memory store's tables, and what more than one port does to them: audit events recorded,
request ids answered from their records, tokens revoked."""

from __future__ import annotations

import bisect
import heapq
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TypeVar

from zkplatform.domain.audit import Actor, AuditRecord, Event, Head
from zkplatform.domain.key_log import Cosignature, Device, Leaf
from zkplatform.domain.models import Item, Principal, Tenant, TokenRecord, Vault, new_epoch
from zkplatform.domain.ports.refusals import AlreadyExists
from zkplatform.domain.request_ids import A, Answer, Repeated, RequestId, Reused, oldest_kept
from zkplatform.store.notify import ChangeFeed

K = TypeVar("K")
V = TypeVar("V")
T = TypeVar("T")


@dataclass(slots=True)
class _Stored:
    item: Item
    sequence: int  # the vault sequence number of the item's latest change


class _VaultIndex:
    """One vault's item ids in order and its changes in sequence order, so that a page of
    ListItems or ListChanges costs O(log n + page), not a scan of every item of the store."""

    __slots__ = ("_changes", "ids")

    def __init__(self) -> None:
        self.ids: list[str] = []  # sorted: every item the vault holds, tombstones included
        self._changes: list[tuple[int, str]] = []  # (sequence, item id), one per change made

    def added(self, item_id: str, sequence: int) -> None:
        bisect.insort(self.ids, item_id)
        self._changes.append((sequence, item_id))

    def imported(self, added: list[tuple[str, int]]) -> None:
        """Many items at once (an import): one sort, where an insertion each would move the list each time."""
        self.ids.extend(item_id for item_id, _ in added)
        self.ids.sort()
        self._changes.extend((sequence, item_id) for item_id, sequence in added)

    def changed(self, item_id: str, sequence: int) -> None:
        self._changes.append((sequence, item_id))

    def removed(self, item_id: str) -> None:
        del self.ids[bisect.bisect_left(self.ids, item_id)]

    def ids_after(self, item_id: str) -> Iterator[str]:
        return _from(self.ids, bisect.bisect_right(self.ids, item_id))

    def changes_after(self, since: int, latest: Callable[[str], int | None]) -> Iterator[tuple[int, str]]:
        """The changes after `since` that are still their item's latest (`latest`: an item's
        sequence, None once purged); the others are dropped when they outnumber the items."""
        if len(self._changes) > 2 * len(self.ids) + 64:
            self._changes = sorted((seq, i) for i in self.ids if (seq := latest(i)) is not None)
        start = bisect.bisect_right(self._changes, since, key=_sequence_of)
        return (c for c in _from(self._changes, start) if latest(c[1]) == c[0])


def _sequence_of(change: tuple[int, str]) -> int:
    return change[0]


def _from(values: list[T], start: int) -> Iterator[T]:
    """The list's values from `start` on, reached directly (islice would step over the ones before)."""
    return (values[i] for i in range(start, len(values)))


class _LiveMinted:
    """One principal's live minted tokens, kept so that a mint costs O(log n) of them, not O(n):
    the live ones by secret hash, and a heap by expiry from which the expired ones leave as
    their time passes and the revoked ones as they reach its top (both are final)."""

    __slots__ = ("_by_expiry", "_live")

    def __init__(self) -> None:
        self._live: set[bytes] = set()
        self._by_expiry: list[tuple[int, bytes]] = []

    def add(self, token: TokenRecord) -> None:
        self._live.add(token.secret_hash)
        heapq.heappush(self._by_expiry, (token.expires_at, token.secret_hash))

    def revoked(self, secret_hash: bytes) -> None:
        self._live.discard(secret_hash)

    def count(self, now: int) -> int:
        """How many are live at `now`."""
        while self._by_expiry and (self._by_expiry[0][0] <= now or self._by_expiry[0][1] not in self._live):
            self._live.discard(heapq.heappop(self._by_expiry)[1])
        return len(self._live)

    def first_expiry(self) -> int:
        """When the first of them expires (after `count`, which leaves a live one on top)."""
        return self._by_expiry[0][0]


_NO_ITEMS = _VaultIndex()  # of a vault without items; never written to


@dataclass(frozen=True, slots=True)
class _Answered:
    """A call made with a request id: what it asked (its fingerprint), when, and what it answered."""

    fingerprint: bytes
    at: int
    answer: Answer


class Tables:
    """Every table of the store, in this process's memory."""

    def __init__(self) -> None:
        self._tenants: dict[str, Tenant] = {}
        self._principals: dict[str, Principal] = {}
        self._vaults: dict[str, Vault] = {}
        self._sequences: dict[str, int] = {}
        self._purge_horizons: dict[str, int] = {}
        # A memory store's history starts with the process: a restarted server's clients start over.
        self._epoch = new_epoch()
        self._feed = ChangeFeed()
        self._items: dict[tuple[str, str], _Stored] = {}
        self._indexes: dict[str, _VaultIndex] = {}  # vault -> its items' order and changes
        self._tokens: dict[bytes, TokenRecord] = {}
        self._token_ids: dict[str, bytes] = {}  # token id -> secret hash
        # principal -> (issued_at, token id, secret hash) of each of its tokens, in that order: a page of
        # ListTokens is the newest first, read from where the last page ended.
        self._principal_tokens: dict[str, list[tuple[int, str, bytes]]] = {}
        self._children: dict[str, list[str]] = {}  # token id -> ids of the tokens minted from it
        self._minted: dict[str, _LiveMinted] = {}  # principal -> its live minted tokens
        self._mint_attempts: dict[str, deque[int]] = {}
        self._proofs: dict[tuple[str, str], int] = {}
        self._proofs_by_expiry: list[tuple[int, str, str]] = []
        self._audit: dict[str, list[AuditRecord]] = {}
        self._heads: dict[str, Head] = {}
        self._unchained: list[Event] = []  # recorded, not yet in their tenants' chains (see _record)
        self._key_logs: dict[str, list[Leaf]] = {}  # tenant -> its key log's entries, index n at n
        self._devices: dict[tuple[str, str], Device] = {}  # (tenant, device id) -> the device
        self._device_keys: dict[tuple[str, str], str] = {}  # (tenant, device or agreement key id) -> device id
        self._principal_devices: dict[str, dict[str, list[str]]] = {}  # tenant -> principal -> ids, in log order
        self._cosignatures: dict[str, dict[int, dict[str, Cosignature]]] = {}  # tenant -> size -> witness -> it
        self._answered: dict[tuple[str, str], _Answered] = {}  # (principal, request id) -> its record

    def _revoke(self, token_ids: Iterable[str]) -> list[str]:
        revoked = []
        for token_id in token_ids:
            secret_hash = self._token_ids[token_id]
            if not (token := self._tokens[secret_hash]).revoked:
                self._tokens[secret_hash] = token.as_revoked()
                if token.minted and (minted := self._minted.get(token.principal_id)) is not None:
                    minted.revoked(secret_hash)
                revoked.append(token_id)
        # Applied before any task runs again: the woken watches read the tokens revoked.
        self._feed.revoked(revoked)
        return sorted(revoked)

    def _earlier(self, actor: Actor, request: RequestId | None, kind: type[A]) -> Repeated[A] | Reused | None:
        """What the principal's record of the request id says, if it made one still kept."""
        if request is None:
            return None
        record = self._answered.get((actor.principal_id, request.value))
        if record is None or record.at < oldest_kept(actor.at):
            return None
        if record.fingerprint != request.fingerprint or not isinstance(record.answer, kind):
            return Reused()
        return Repeated(record.answer)

    def _remember(self, actor: Actor, request: RequestId | None, answer: Answer) -> None:
        if request is not None:
            self._answered[(actor.principal_id, request.value)] = _Answered(request.fingerprint, actor.at, answer)

    def _record(self, events: Iterable[Event]) -> None:
        # Appended in the change's own step, hashed when the trail is read: nothing outside
        # this process can read or edit the events in between, and a change pays a list append
        # instead of its event's bytes and hash, a large part of what a memory-store call costs.
        self._unchained.extend(events)


def _insert(table: dict[K, V], key: K, value: V, what: str) -> None:
    if key in table:
        raise AlreadyExists(f"{what} already exists" if isinstance(key, bytes) else f"{what} {key} already exists")
    table[key] = value
