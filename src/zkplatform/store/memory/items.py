"""The memory store's items: their changes, pages, purges and the store's epoch."""

from __future__ import annotations

import itertools
from collections.abc import Iterable

from zkplatform.domain import audit
from zkplatform.domain.audit import Action, Actor
from zkplatform.domain.models import ChangePage, Item, ItemChange, ItemPage, ItemPatch, new_epoch
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
from zkplatform.domain.ports.refusals import AlreadyExists, UnknownReference
from zkplatform.domain.request_ids import RequestId, oldest_kept
from zkplatform.store.memory.tables import _NO_ITEMS, Tables, _Stored, _VaultIndex


class MemoryItems(Tables):
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

    def _forget_content(self, vault_id: str, item_id: str) -> None:
        """A delete erases the item's content from the answers recorded of it too (a scan: the
        memory store holds what a development server or a test makes)."""
        for key, record in list(self._answered.items()):
            answer = record.answer
            if isinstance(answer, ItemChange) and (answer.item.vault_id, answer.item.item_id) == (vault_id, item_id):
                del self._answered[key]
