"""The items of the vaults: their changes, pages and the store's epoch."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from zkplatform.domain.audit import Actor
from zkplatform.domain.models import ChangePage, Item, ItemChange, ItemPage, ItemPatch, Tombstone
from zkplatform.domain.request_ids import Repeated, RequestId, Reused


@dataclass(frozen=True, slots=True)
class Missing:
    """No such item in that vault (or its tombstone was purged)."""


@dataclass(frozen=True, slots=True)
class Stale:
    """The item is live at another version."""

    current_version: int


DeleteOutcome = Tombstone | Stale | Missing | Repeated[ItemChange] | Reused


@dataclass(frozen=True, slots=True)
class Created:
    """The item was stored: its creation."""

    change: ItemChange


@dataclass(frozen=True, slots=True)
class Existing:
    """The vault already holds an item of that id (maybe a tombstone): it, as of its latest change."""

    change: ItemChange


CreateOutcome = Created | Existing | Repeated[ItemChange] | Reused


@dataclass(frozen=True, slots=True)
class Conflict:
    """The update did not apply: the item, maybe a tombstone, as of its latest change."""

    current: ItemChange


UpdateOutcome = ItemChange | Conflict | Missing | Repeated[ItemChange] | Reused
# The answer of an answer's record: None when it was recorded now, or what a record made first says.
RecordOutcome = Repeated[ItemChange] | Reused | None


class ItemRepository(Protocol):
    async def add_items(self, items: Iterable[Item], actor: Actor) -> None:
        """Store new items in one transaction, all or none; each takes its
        vault's next sequence number, in the order given.

        `items` may be any iterable, a generator of an import of any length
        included: it is consumed exactly once, and the SQL stores hold one chunk
        of it in memory at a time. AlreadyExists or UnknownReference names the
        first item, in the order given, that cannot be added, and then nothing is
        stored and no sequence number taken; an error raised by `items` itself
        propagates, with the same effect."""
        ...

    async def get_item(self, vault_id: str, item_id: str) -> Item | None:
        """The item as last committed, a tombstone included (deleted, no payload
        and no keys); None when the vault holds no such item or its tombstone
        was purged. Not authorised here: the caller checks the vault."""
        ...

    async def delete_item(
        self, vault_id: str, item_id: str, base_version: int, actor: Actor, *, request: RequestId | None = None
    ) -> DeleteOutcome:
        """Atomically: if the item is live at base_version, make it a tombstone
        at `actor.at` with the vault's next sequence number. A tombstone answers as
        it was first deleted, whatever base_version says (a success: recorded under
        `request`). The delete also forgets every recorded answer that holds the
        item's content (a create's, an update's): nothing decryptable stays."""
        ...

    async def create_item(self, item: Item, actor: Actor, *, request: RequestId | None = None) -> CreateOutcome:
        """Atomically: store the new item with the vault's next sequence number,
        unless the vault holds an item of that id (a tombstone included): then
        change nothing and answer that item (not recorded: whether it is a repeat is
        the domain's to say). Concurrent creates of one id store exactly one.
        UnknownReference when the store has no such vault in the item's tenant."""
        ...

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
        """Atomically: if the item is live at base_version, write what `patch` holds
        (the other fields kept as they are), one version later, at `actor.at`, with the vault's next sequence number. A
        compare-and-set: of concurrent updates at one base_version exactly one
        applies, and the others answer Conflict with the item as it then is (not
        recorded, as a create's Existing)."""
        ...

    async def record_answer(self, actor: Actor, request: RequestId, answer: ItemChange) -> RecordOutcome:
        """Record `answer` under the request id, for a call that succeeded without a change (a
        repeat the domain recognised by its content), unless the principal has a record of that
        id within the retention period: then change nothing and answer Repeated or Reused. Nor is
        anything recorded once the item is deleted (None): its content must not outlive it."""
        ...

    async def list_items(self, vault_id: str, after_item_id: str, limit: int, *, show_deleted: bool) -> ItemPage:
        """At most `limit` items of the vault with an item_id after `after_item_id`
        ("" for the first), in item_id order, tombstones only if show_deleted; and
        the vault's sequence number (0 for a vault the store does not have) and the
        store's epoch, read in the same snapshot as those items. A keyset scan of the
        primary key: any page costs what the first costs."""
        ...

    async def vault_sequence(self, vault_id: str) -> int:
        """The sequence number of the vault's latest change: an add, a create,
        an update or a delete (purges are not changes): 0 before any, and for a vault the store does
        not have. Every change takes the next one, so it counts the changes."""
        ...

    async def purge_tombstones(self, deleted_before: int, actor: Actor) -> int:
        """Forget tombstones deleted before that time (they answer NOT_FOUND
        from then on); the number purged. In the same transaction, each vault's
        purge horizon rises to the highest sequence purged from it (never falls):
        a changes cursor below it may have missed one of those deletes. The records
        of request ids past the retention period at `actor.at` are forgotten too (they
        answer nothing already; not audited: bookkeeping, not changes)."""
        ...

    async def list_changes(self, vault_id: str, since: int, limit: int) -> ChangePage:
        """At most `limit` items of the vault whose latest change is after `since`, in
        ascending sequence, each once (tombstones included), with the vault's sequence and
        purge horizon and the store's epoch, all in one snapshot. A range scan of an index on
        (vault_id, sequence): a page at the end of a long history costs what the first page
        costs."""
        ...

    async def epoch(self) -> str:
        """The store's epoch: an opaque string naming its history of changes (domain.models.
        new_epoch), made with the store (its schema's migrations, a memory store's start) and
        kept until rotate_epoch. A store restored from a backup gets a new one, so that cursors
        of the history the restore undid are refused instead of read as its own. It may be as
        this worker read it up to a second ago (list_items and list_changes read it in their
        snapshot, for the checks of cursors)."""
        ...

    async def rotate_epoch(self, actor: Actor) -> str:
        """Replace the store's epoch with a new one (new_epoch), and record it in every tenant's
        audit trail in the same transaction; the new epoch. Nothing else changes."""
        ...
