"""The in-memory store: the default for development and the fake for tests.

It must behave exactly like the durable stores. Atomicity comes from asyncio:
no method awaits between reading and writing, so each runs as one step that no
other task can interleave with.
"""

from __future__ import annotations

import bisect
import heapq
import itertools
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from typing import TypeVar

from zkplatform.domain import audit
from zkplatform.domain.audit import Action, Actor, AuditRecord, Event, Head
from zkplatform.domain.key_log import AddDevice, Cosignature, Device, Leaf, LogChange
from zkplatform.domain.models import (
    ChangePage,
    Item,
    ItemChange,
    ItemPage,
    ItemPatch,
    Principal,
    ScopeChange,
    Tenant,
    TokenRecord,
    Vault,
    new_epoch,
)
from zkplatform.domain.ports.items import (
    Conflict,
    Created,
    CreateOutcome,
    DeleteOutcome,
    Existing,
    Missing,
    RecordOutcome,
    Stale,
    UpdateOutcome,
)
from zkplatform.domain.ports.refusals import AlreadyExists, ParentRevoked, PrincipalDisabled, UnknownReference
from zkplatform.domain.ports.tokens import MintOutcome, RevokeOutcome
from zkplatform.domain.request_ids import A, Answer, Repeated, RequestId, Reused, oldest_kept
from zkplatform.store.key_rows import taken
from zkplatform.store.notify import ChangeFeed
from zkplatform_tlog.merkle import leaf_hash

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


class MemoryStore:
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

    async def close(self) -> None:
        return None

    def change_feed(self) -> ChangeFeed:
        return self._feed

    async def ping(self) -> None:
        return None  # in this process: reachable while the process is

    async def schema_version(self) -> int | None:
        return 0  # nothing to migrate: the memory store has no schema

    async def migrate(self) -> list[int]:
        return []

    # directory

    async def add_tenant(self, tenant: Tenant, actor: Actor) -> None:
        _insert(self._tenants, tenant.tenant_id, tenant, "tenant")
        self._record([actor.event(tenant.tenant_id, Action.TENANT_ADDED, tenant=tenant.tenant_id)])

    async def add_principal(self, principal: Principal, actor: Actor) -> None:
        if principal.tenant_id not in self._tenants:
            raise UnknownReference(f"no tenant {principal.tenant_id}")
        _insert(self._principals, principal.principal_id, principal, "principal")
        self._record([actor.event(principal.tenant_id, Action.PRINCIPAL_ADDED, principal=principal.principal_id)])

    async def add_vault(self, vault: Vault, actor: Actor) -> None:
        if vault.tenant_id not in self._tenants:
            raise UnknownReference(f"no tenant {vault.tenant_id}")
        for member in sorted(vault.members):
            principal = self._principals.get(member)
            if principal is None or principal.tenant_id != vault.tenant_id:
                raise UnknownReference(f"no principal {member} in tenant {vault.tenant_id}")
        _insert(self._vaults, vault.vault_id, vault, "vault")
        self._sequences[vault.vault_id] = 0
        self._record(audit.vault_events(actor, vault))

    async def get_principal(self, principal_id: str) -> Principal | None:
        return self._principals.get(principal_id)

    async def get_vault(self, vault_id: str) -> Vault | None:
        return self._vaults.get(vault_id)

    async def list_tenants(self) -> list[Tenant]:
        return sorted(self._tenants.values(), key=lambda t: t.tenant_id)

    async def list_principals(self, tenant_id: str) -> list[Principal]:
        return sorted((p for p in self._principals.values() if p.tenant_id == tenant_id), key=lambda p: p.principal_id)

    async def list_vaults(self, tenant_id: str) -> list[Vault]:
        return sorted((v for v in self._vaults.values() if v.tenant_id == tenant_id), key=lambda v: v.vault_id)

    async def list_member_vaults(self, principal_id: str, after: str, limit: int) -> list[Vault]:
        found = (v for v in self._vaults.values() if principal_id in v.members and v.vault_id > after)
        return sorted(found, key=lambda v: v.vault_id)[:limit]

    async def add_vault_member(self, vault_id: str, principal_id: str, actor: Actor) -> bool:
        vault = self._vaults.get(vault_id)
        if vault is None:
            raise UnknownReference(f"no vault {vault_id}")
        principal = self._principals.get(principal_id)
        if principal is None or principal.tenant_id != vault.tenant_id:
            raise UnknownReference(f"no principal {principal_id} in tenant {vault.tenant_id}")
        if principal_id in vault.members:
            return False
        self._vaults[vault_id] = replace(vault, members=vault.members | {principal_id})
        self._record([actor.event(vault.tenant_id, Action.VAULT_MEMBER_ADDED, vault=vault_id, principal=principal_id)])
        return True

    async def remove_vault_member(self, vault_id: str, principal_id: str, actor: Actor) -> bool:
        vault = self._vaults.get(vault_id)
        if vault is None:
            raise UnknownReference(f"no vault {vault_id}")
        if principal_id not in vault.members:
            return False
        self._vaults[vault_id] = replace(vault, members=vault.members - {principal_id})
        self._feed.access_changed(vault_id)
        self._record(
            [actor.event(vault.tenant_id, Action.VAULT_MEMBER_REMOVED, vault=vault_id, principal=principal_id)]
        )
        return True

    async def set_principal_disabled(self, principal_id: str, actor: Actor, *, disabled: bool) -> list[str] | None:
        principal = self._principals.get(principal_id)
        if principal is None:
            return None
        self._principals[principal_id] = replace(principal, disabled=disabled)
        revoked = []
        if disabled:
            revoked = self._revoke(
                [
                    t.token_id
                    for *_, h in self._principal_tokens.get(principal_id, ())
                    if not (t := self._tokens[h]).revoked
                ]
            )
        self._record(audit.disable_events(actor, principal.tenant_id, principal_id, revoked, disabled=disabled))
        return revoked

    async def change_principal_scopes(
        self, tenant_id: str, principal_id: str, change: ScopeChange, actor: Actor
    ) -> tuple[Principal, Principal]:
        before = self._principals.get(principal_id)
        if before is None or before.tenant_id != tenant_id:
            where = f"no principal {principal_id} in tenant {tenant_id}"
            raise UnknownReference(where if tenant_id in self._tenants else f"no tenant {tenant_id}")
        after = change.applied(before)
        if after.allowed_scopes == before.allowed_scopes:
            return before, after
        self._principals[principal_id] = after
        self._record([audit.scopes_event(actor, before, after)])
        if before.scopes - after.scopes:  # its open watches check their scope again
            self._feed.revoked(token_id for _, token_id, _ in self._principal_tokens.get(principal_id, ()))
        return before, after

    # items

    async def add_items(self, items: Iterable[Item], actor: Actor) -> None:
        items = list(items)  # consumed once; the memory store keeps them all anyway
        seen: set[tuple[str, str]] = set()
        for item in items:  # check everything first: all or none
            vault = self._vaults.get(item.vault_id)
            if vault is None or vault.tenant_id != item.tenant_id:
                raise UnknownReference(f"no vault {item.vault_id} in tenant {item.tenant_id}")
            key = (item.vault_id, item.item_id)
            if key in self._items or key in seen:
                raise AlreadyExists(f"item {item.item_id} in vault {item.vault_id} already exists")
            seen.add(key)
        added: dict[str, list[tuple[str, int]]] = {}
        for item in items:
            stored = self._items[(item.vault_id, item.item_id)] = _Stored(item, self._next_sequence(item.vault_id))
            added.setdefault(item.vault_id, []).append((item.item_id, stored.sequence))
        for vault_id, vault_items in added.items():
            self._indexes.setdefault(vault_id, _VaultIndex()).imported(vault_items)
        self._record(audit.item_event(actor, Action.ITEM_CREATED, item) for item in items)

    async def get_item(self, vault_id: str, item_id: str) -> Item | None:
        stored = self._items.get((vault_id, item_id))
        return None if stored is None else stored.item

    async def delete_item(
        self, vault_id: str, item_id: str, base_version: int, actor: Actor, *, request: RequestId | None = None
    ) -> DeleteOutcome:
        if (earlier := self._earlier(actor, request, ItemChange)) is not None:
            return earlier
        stored = self._items.get((vault_id, item_id))
        if stored is None:
            return Missing()
        if not stored.item.deleted:
            if stored.item.version != base_version:
                return Stale(stored.item.version)
            stored.item = stored.item.tombstone(actor.at)
            stored.sequence = self._next_sequence(vault_id)
            self._indexes[vault_id].changed(item_id, stored.sequence)
            self._forget_content(vault_id, item_id)
            self._record([audit.item_event(actor, Action.ITEM_DELETED, stored.item)])
        change = ItemChange(stored.item, stored.sequence)
        self._remember(actor, request, change)
        return change

    async def create_item(self, item: Item, actor: Actor, *, request: RequestId | None = None) -> CreateOutcome:
        vault = self._vaults.get(item.vault_id)
        if vault is None or vault.tenant_id != item.tenant_id:
            raise UnknownReference(f"no vault {item.vault_id} in tenant {item.tenant_id}")
        if (earlier := self._earlier(actor, request, ItemChange)) is not None:
            return earlier
        key = (item.vault_id, item.item_id)
        if (stored := self._items.get(key)) is not None:
            return Existing(ItemChange(stored.item, stored.sequence))
        stored = self._add_item(item)
        self._record([audit.item_event(actor, Action.ITEM_CREATED, item)])
        change = ItemChange(stored.item, stored.sequence)
        self._remember(actor, request, change)
        return Created(change)

    async def update_item(  # noqa: PLR0913 # the update's parts, and the request id naming it
        self,
        vault_id: str,
        item_id: str,
        base_version: int,
        patch: ItemPatch,
        actor: Actor,
        *,
        request: RequestId | None = None,
    ) -> UpdateOutcome:
        if (earlier := self._earlier(actor, request, ItemChange)) is not None:
            return earlier
        stored = self._items.get((vault_id, item_id))
        if stored is None:
            return Missing()
        if stored.item.deleted or stored.item.version != base_version:
            return Conflict(ItemChange(stored.item, stored.sequence))
        stored.item = stored.item.patched(patch, actor.at)
        stored.sequence = self._next_sequence(vault_id)
        self._indexes[vault_id].changed(item_id, stored.sequence)
        self._record([audit.item_event(actor, Action.ITEM_UPDATED, stored.item)])
        change = ItemChange(stored.item, stored.sequence)
        self._remember(actor, request, change)
        return change

    async def record_answer(self, actor: Actor, request: RequestId, answer: ItemChange) -> RecordOutcome:
        if (earlier := self._earlier(actor, request, ItemChange)) is not None:
            return earlier
        stored = self._items.get((answer.item.vault_id, answer.item.item_id))
        if stored is not None and not stored.item.deleted:
            self._remember(actor, request, answer)
        return None

    async def list_items(self, vault_id: str, after_item_id: str, limit: int, *, show_deleted: bool) -> ItemPage:
        index = self._indexes.get(vault_id, _NO_ITEMS)
        stored = (self._items[(vault_id, item_id)] for item_id in index.ids_after(after_item_id))
        page = itertools.islice((s.item for s in stored if show_deleted or not s.item.deleted), limit)
        return ItemPage(tuple(page), self._sequences.get(vault_id, 0), self._epoch)

    async def vault_sequence(self, vault_id: str) -> int:
        return self._sequences.get(vault_id, 0)

    async def epoch(self) -> str:
        return self._epoch

    async def rotate_epoch(self, actor: Actor) -> str:
        self._epoch = new_epoch()
        self._record(audit.epoch_events(actor, sorted(self._tenants), self._epoch))
        return self._epoch

    async def purge_tombstones(self, deleted_before: int, actor: Actor) -> int:
        oldest = oldest_kept(actor.at)
        for key in [k for k, r in self._answered.items() if r.at < oldest]:
            del self._answered[key]
        purged = [k for k, s in self._items.items() if s.item.deleted and s.item.updated_at < deleted_before]
        events = []
        for key in purged:
            vault_id = key[0]
            stored = self._items.pop(key)
            self._indexes[vault_id].removed(key[1])
            self._purge_horizons[vault_id] = max(self._purge_horizons.get(vault_id, 0), stored.sequence)
            events.append(audit.item_event(actor, Action.ITEM_PURGED, stored.item))
        self._record(events)
        return len(purged)

    async def list_changes(self, vault_id: str, since: int, limit: int) -> ChangePage:
        def latest(item_id: str) -> int | None:
            stored = self._items.get((vault_id, item_id))
            return None if stored is None else stored.sequence

        changes = self._indexes.get(vault_id, _NO_ITEMS).changes_after(since, latest)
        page = (ItemChange(self._items[(vault_id, i)].item, seq) for seq, i in itertools.islice(changes, limit))
        sequence, horizon = self._sequences.get(vault_id, 0), self._purge_horizons.get(vault_id, 0)
        return ChangePage(tuple(page), sequence, horizon, self._epoch)

    def _add_item(self, item: Item) -> _Stored:
        stored = self._items[(item.vault_id, item.item_id)] = _Stored(item, self._next_sequence(item.vault_id))
        self._indexes.setdefault(item.vault_id, _VaultIndex()).added(item.item_id, stored.sequence)
        return stored

    def _next_sequence(self, vault_id: str) -> int:
        self._sequences[vault_id] += 1
        # The change is applied before any task runs again: the woken watches see it.
        self._feed.notify(vault_id)
        return self._sequences[vault_id]

    # tokens

    async def add_token(self, token: TokenRecord, actor: Actor) -> None:
        self._add_token(token)
        self._record([actor.event(token.tenant_id, Action.TOKEN_ISSUED, token=token.token_id)])

    def _add_token(self, token: TokenRecord) -> None:
        principal = self._principals.get(token.principal_id)
        if principal is None:
            raise UnknownReference(f"no principal {token.principal_id}")
        if principal.disabled:
            raise PrincipalDisabled(f"principal {token.principal_id} is disabled")
        if token.token_id in self._token_ids:
            raise AlreadyExists("token already exists")
        _insert(self._tokens, token.secret_hash, token, "token")
        self._token_ids[token.token_id] = token.secret_hash
        owned = self._principal_tokens.setdefault(token.principal_id, [])
        bisect.insort(owned, (token.issued_at, token.token_id, token.secret_hash))
        if token.parent_token_id:
            self._children.setdefault(token.parent_token_id, []).append(token.token_id)

    async def add_minted_token(
        self, token: TokenRecord, cap: int, actor: Actor, *, request: RequestId | None = None
    ) -> MintOutcome:
        if (earlier := self._earlier(actor, request, tuple)) is not None:
            return earlier
        parent = self._tokens.get(self._token_ids.get(token.parent_token_id, b""))
        if parent is not None and parent.revoked:
            raise ParentRevoked(f"token {parent.token_id} was revoked")
        minted = self._minted.setdefault(token.principal_id, _LiveMinted())
        if minted.count(actor.at) >= cap:
            return minted.first_expiry()
        self._add_token(token)
        minted.add(token)
        self._record([actor.event(token.tenant_id, Action.TOKEN_MINTED, token=token.token_id)])
        self._remember(actor, request, (token.token_id,))
        return None

    async def find_token(self, secret_hash: bytes) -> TokenRecord | None:
        return self._tokens.get(secret_hash)

    async def find_token_with_principal(self, secret_hash: bytes) -> tuple[TokenRecord, Principal] | None:
        token = self._tokens.get(secret_hash)
        return None if token is None else (token, self._principals[token.principal_id])

    async def get_token(self, token_id: str) -> TokenRecord | None:
        secret_hash = self._token_ids.get(token_id)
        return None if secret_hash is None else self._tokens[secret_hash]

    async def get_token_with_principal(self, token_id: str) -> tuple[TokenRecord, Principal] | None:
        token = await self.get_token(token_id)
        return None if token is None else (token, self._principals[token.principal_id])

    async def revoke_token_tree(
        self, token_id: str, actor: Actor, action: Action = Action.TOKEN_REVOKED, *, audited: bool = True
    ) -> list[str] | None:
        if token_id not in self._token_ids:
            return None
        tree, walked = [token_id], 0
        while walked < len(tree):  # breadth first, without recursion: a tree may be deep
            tree.extend(self._children.get(tree[walked], ()))
            walked += 1
        revoked = self._revoke(tree)
        tenant_id = self._tokens[self._token_ids[token_id]].tenant_id
        if audited:
            self._record(audit.revoke_events(actor, action, tenant_id, token_id, revoked))
        return revoked

    async def revoke_token_tree_once(self, token_id: str, actor: Actor, request: RequestId | None) -> RevokeOutcome:
        if (earlier := self._earlier(actor, request, tuple)) is not None:
            return earlier
        revoked = await self.revoke_token_tree(token_id, actor)  # no await inside: one step still
        if revoked is not None:
            self._remember(actor, request, tuple(revoked))
        return revoked

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

    async def list_tokens(
        self,
        tenant_id: str,
        principal_id: str | None,
        *,
        live_at: int | None,
        after: tuple[int, str] | None,
        limit: int,
    ) -> list[tuple[TokenRecord, Principal]]:
        if principal_id is not None:  # newest first from the page's start: a page costs its size, not all
            owned = self._principal_tokens.get(principal_id, [])
            start = len(owned) if after is None else bisect.bisect_left(owned, after)
            newest_first = (self._tokens[owned[i][2]] for i in range(start - 1, -1, -1))
            live = (t for t in newest_first if t.tenant_id == tenant_id and (live_at is None or t.is_live(live_at)))
            return [(t, self._principals[t.principal_id]) for t in itertools.islice(live, limit)]
        # A whole tenant's tokens: a scan of every token (operators list so, rarely).
        found = [
            t
            for t in self._tokens.values()
            if t.tenant_id == tenant_id
            and (live_at is None or t.is_live(live_at))
            and (after is None or (t.issued_at, t.token_id) < after)
        ]
        found.sort(key=lambda t: (t.issued_at, t.token_id), reverse=True)
        return [(t, self._principals[t.principal_id]) for t in found[:limit]]

    async def touch_token(self, token_id: str, now: int, stale_before: int) -> None:
        secret_hash = self._token_ids.get(token_id)
        if secret_hash is None:
            return
        token = self._tokens[secret_hash]
        if token.last_used_at is None or token.last_used_at < stale_before:
            self._tokens[secret_hash] = replace(token, last_used_at=now)

    # request ids

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

    def _forget_content(self, vault_id: str, item_id: str) -> None:
        """A delete erases the item's content from the answers recorded of it too (a scan: the
        memory store holds what a development server or a test makes)."""
        for key, record in list(self._answered.items()):
            answer = record.answer
            if isinstance(answer, ItemChange) and (answer.item.vault_id, answer.item.item_id) == (vault_id, item_id):
                del self._answered[key]

    # audit trail

    def _record(self, events: Iterable[Event]) -> None:
        # Appended in the change's own step, hashed when the trail is read: nothing outside
        # this process can read or edit the events in between, and a change pays a list append
        # instead of its event's bytes and hash (about a tenth of a memory-store call).
        self._unchained.extend(events)

    def _chain(self) -> None:
        """Give the events recorded since the trail was last read their places and hashes."""
        for tenant_id, events in audit.by_tenant(self._unchained):
            records = list(audit.appended(self._heads.get(tenant_id), tenant_id, events))
            self._audit.setdefault(tenant_id, []).extend(records)
            last = records[-1]
            self._heads[tenant_id] = Head(tenant_id, last.sequence, last.hash)
        self._unchained.clear()

    async def audit_tenants(self) -> list[str]:
        self._chain()
        return sorted(self._heads.keys() | self._audit.keys())

    async def audit_head(self, tenant_id: str) -> Head | None:
        self._chain()
        return self._heads.get(tenant_id)

    async def audit_records(self, tenant_id: str, after: int, limit: int) -> list[AuditRecord]:
        self._chain()
        records = self._audit.get(tenant_id, [])
        start = max(after, 0)  # nothing is numbered below 1 here: after may be audit.BEFORE_ALL
        return records[start : start + limit]  # sequence n is at index n - 1

    # key log

    async def key_log_size(self, tenant_id: str) -> int:
        return len(self._key_logs.get(tenant_id, ()))

    async def devices(self, tenant_id: str, principal_id: str | None = None) -> list[Device]:
        owned = self._principal_devices.get(tenant_id, {})
        principals = sorted(owned) if principal_id is None else [principal_id]
        return [self._devices[tenant_id, d] for p in principals for d in owned.get(p, ())]

    async def find_device_key(self, tenant_id: str, key_id: str) -> Device | None:
        device_id = self._device_keys.get((tenant_id, key_id))
        return None if device_id is None else self._devices[tenant_id, device_id]

    async def append_key_log(  # noqa: PLR0913 # the entry, its change and event, and the request id naming it
        self,
        tenant_id: str,
        expected_size: int,
        entry: bytes,
        *,
        change: LogChange,
        event: tuple[Action, dict[str, str]],
        actor: Actor,
        request: RequestId | None = None,
    ) -> int | Repeated[tuple[str, ...]] | Reused | None:
        if (earlier := self._earlier(actor, request, tuple)) is not None:
            return earlier
        leaves = self._key_logs.setdefault(tenant_id, [])
        if len(leaves) != expected_size:
            return None
        if isinstance(change, AddDevice):  # everything checked before anything changes: all or none
            device = replace(change.device, tenant_id=tenant_id, log_index=expected_size)
            principal = self._principals.get(device.principal_id)
            if principal is None or principal.tenant_id != tenant_id:
                raise UnknownReference(f"no principal {device.principal_id} in tenant {tenant_id}")
            for key_id in (device.device_id, device.agreement_key_id):
                if (tenant_id, key_id) in self._device_keys:
                    raise AlreadyExists(taken(tenant_id, key_id))
            self._devices[tenant_id, device.device_id] = device
            self._device_keys[tenant_id, device.device_id] = self._device_keys[tenant_id, device.agreement_key_id] = (
                device.device_id
            )
            self._principal_devices.setdefault(tenant_id, {}).setdefault(device.principal_id, []).append(
                device.device_id
            )
        else:
            for device_id in change.device_ids:
                held = self._devices.get((tenant_id, device_id))
                if held is not None and held.principal_id == change.principal_id and held.live:
                    self._devices[tenant_id, device_id] = replace(
                        held, revoked_at=change.at, revoked_index=expected_size
                    )
        leaves.append(Leaf(expected_size, entry, leaf_hash(entry)))
        action, details = event
        self._record([actor.event(tenant_id, action, **details)])
        self._remember(actor, request, (str(expected_size),))
        return expected_size + 1

    async def key_log_leaves(self, tenant_id: str, start: int, limit: int, size: int) -> list[Leaf]:
        leaves = self._key_logs.get(tenant_id, [])
        return leaves[max(start, 0) : max(min(size, start + limit), 0)]

    async def key_log_hashes(self, tenant_id: str, size: int) -> list[bytes]:
        return [leaf.leaf_hash for leaf in self._key_logs.get(tenant_id, [])[: max(size, 0)]]

    async def live_devices(
        self, tenant_id: str, principal_ids: Iterable[str], size: int, after: tuple[str, int] | None, limit: int
    ) -> list[Device]:
        after = after or ("", -1)
        owned = self._principal_devices.get(tenant_id, {})
        devices = (
            device
            for p in sorted(set(principal_ids))
            if p >= after[0]
            for d in owned.get(p, ())
            if (p, (device := self._devices[tenant_id, d]).log_index) > after and device.live_at(size)
        )
        return list(itertools.islice(devices, max(limit, 0)))

    async def key_log_tenants(self) -> list[str]:
        return sorted(t for t, leaves in self._key_logs.items() if leaves)

    async def save_cosignature(self, cosignature: Cosignature) -> None:
        sizes = self._cosignatures.setdefault(cosignature.tenant_id, {})
        by_witness = sizes.setdefault(cosignature.size, {})
        held = by_witness.get(cosignature.witness)
        if held is None or held.cosigned_at < cosignature.cosigned_at:
            by_witness[cosignature.witness] = cosignature

    async def served_checkpoint(
        self, tenant_id: str, witnesses: Iterable[str], quorum: int
    ) -> tuple[int, list[Cosignature]]:
        named = set(witnesses)
        sizes = self._cosignatures.get(tenant_id, {})

        def of(size: int) -> list[Cosignature]:
            return sorted((c for w, c in sizes.get(size, {}).items() if w in named), key=lambda c: c.witness)

        if quorum <= 0:
            size = len(self._key_logs.get(tenant_id, ()))
            return size, of(size)
        for size in sorted(sizes, reverse=True):
            if len(cosigned := of(size)) >= quorum:
                return size, cosigned
        return 0, []

    async def witness_sizes(self, tenant_id: str) -> dict[str, int]:
        largest: dict[str, int] = {}
        for size, cosigned in self._cosignatures.get(tenant_id, {}).items():
            for witness in cosigned:
                largest[witness] = max(largest.get(witness, 0), size)
        return largest

    # limits

    async def record_mint_attempt(self, principal_id: str, now: int, window_seconds: int, limit: int) -> int | None:
        attempts = self._mint_attempts.setdefault(principal_id, deque())
        while attempts and attempts[0] <= now - window_seconds:
            attempts.popleft()
        attempts.append(now)
        if len(attempts) <= limit:
            return None
        # The next attempt fits once all but limit - 1 of these have left the window.
        return max(1, attempts[len(attempts) - limit] + window_seconds - now)

    async def remember_proof(self, key_thumbprint: str, jti: str, now: int, expires_at: int) -> bool:
        while self._proofs_by_expiry and self._proofs_by_expiry[0][0] < now:
            lapsed, thumb, old = heapq.heappop(self._proofs_by_expiry)
            if self._proofs.get((thumb, old)) == lapsed:
                del self._proofs[(thumb, old)]
        key = (key_thumbprint, jti)
        if key in self._proofs:
            return False
        self._proofs[key] = expires_at
        heapq.heappush(self._proofs_by_expiry, (expires_at, key_thumbprint, jti))
        return True


def _insert(table: dict[K, V], key: K, value: V, what: str) -> None:
    if key in table:
        raise AlreadyExists(f"{what} already exists" if isinstance(key, bytes) else f"{what} {key} already exists")
    table[key] = value
