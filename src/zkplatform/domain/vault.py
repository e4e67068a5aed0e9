"""Vault use cases: a vault's items, and the vaults a caller is a member of.

Each checks, in this order, before it looks at any item: the token's scope, then
that the caller is a member of the vault in its own tenant (a vault that does not
exist answers the same, so the answer reveals nothing). Listing the caller's vaults
needs the scope alone: its own memberships are what it lists.
"""

from __future__ import annotations

from dataclasses import dataclass

from zkplatform.domain.audit import Actor
from zkplatform.domain.auth import Caller
from zkplatform.domain.clock import Clock
from zkplatform.domain.errors import (
    CursorExpired,
    ItemDeleted,
    ItemExists,
    ItemNotFound,
    RequestIdReused,
    VersionMismatch,
)
from zkplatform.domain.models import Item, ItemChange, ItemContent, ItemPatch, Scope, Tombstone, Vault
from zkplatform.domain.paging import ElementSizes, PageTokens, Position, fitting, page_limit
from zkplatform.domain.ports.directory import DirectoryRepository
from zkplatform.domain.ports.items import Conflict, Created, Existing, ItemRepository, Missing, Stale
from zkplatform.domain.request_ids import Repeated, RequestId, Reused


@dataclass(frozen=True, slots=True)
class ListedItems:
    """One page of a listing, the token of the next ("" on the last), and the
    vault's sequence number and the store's epoch when the listing's first page was read."""

    items: tuple[Item, ...]
    next_page_token: str
    sequence: int
    epoch: str


@dataclass(frozen=True, slots=True)
class ListedVaults:
    """One page of the caller's vaults, with their members, and the token of the next ("" on the last)."""

    vaults: tuple[Vault, ...]
    next_page_token: str


# What a page token of the caller's vaults is bound to, besides its tenant and principal.
_VAULT_LISTING = "member vaults"


class VaultUseCases:
    def __init__(
        self,
        directory: DirectoryRepository,
        items: ItemRepository,
        clock: Clock,
        page_tokens: PageTokens,
        sizes: ElementSizes,
    ) -> None:
        self._directory = directory
        self._items = items
        self._clock = clock
        self._page_tokens = page_tokens
        self._sizes = sizes

    async def epoch(self) -> str:
        """The store's epoch: what the cursor of a change made just now belongs to (read after the
        change: the epoch changes only with a restore, while no change is being made)."""
        return await self._items.epoch()

    async def delete_item(
        self, caller: Caller, vault_id: str, item_id: str, base_version: int, *, request: RequestId | None = None
    ) -> Tombstone:
        """Delete a live item at base_version, or return the tombstone of an earlier delete;
        with a request id the principal used for this delete before, what that call answered."""
        caller.require_scope(Scope.VAULT_ITEMS_DELETE)
        caller.require_member(await self._directory.get_vault(vault_id))
        match await self._items.delete_item(
            vault_id, item_id, base_version, caller.actor(self._clock()), request=request
        ):
            case Tombstone() as tombstone:
                return tombstone
            case Stale(current_version):
                raise VersionMismatch(current_version)
            case Missing():
                raise _not_found(vault_id, item_id)
            case Repeated(answer):
                return answer
            case Reused():
                raise RequestIdReused

    async def create_item(
        self, caller: Caller, vault_id: str, item_id: str, content: ItemContent, *, request: RequestId | None = None
    ) -> ItemChange:
        """Create the item at version 1, or answer its creation again when this is a repeat of
        it: one with a request id the principal used for it before, or one with its content."""
        caller.require_scope(Scope.VAULT_ITEMS_WRITE)
        vault = caller.require_member(await self._directory.get_vault(vault_id))
        now = self._clock()
        actor = caller.actor(now)
        match await self._items.create_item(
            content.new_item(item_id, vault.tenant_id, vault_id, now), actor, request=request
        ):
            case Created(change):
                return change
            case Existing(change):
                # At version 1 the item's latest change is its creation, so this answers as the creation did.
                if change.item.version == 1 and change.item.content == content:
                    return await self._answered(actor, request, change)
                raise ItemExists(change.item.version, change.item.deleted)
            case Repeated(answer):
                return answer
            case Reused():
                raise RequestIdReused

    async def update_item(  # noqa: PLR0913 # the update's parts, and the request id naming it
        self,
        caller: Caller,
        vault_id: str,
        item_id: str,
        base_version: int,
        patch: ItemPatch,
        *,
        request: RequestId | None = None,
    ) -> ItemChange:
        """Write what `patch` holds to a live item at base_version, or answer that change
        again when this is a repeat of it: one with a request id the principal used for it
        before, or one that writes what the item holds."""
        caller.require_scope(Scope.VAULT_ITEMS_WRITE)
        caller.require_member(await self._directory.get_vault(vault_id))
        actor = caller.actor(self._clock())
        match await self._items.update_item(vault_id, item_id, base_version, patch, actor, request=request):
            case Missing():
                raise _not_found(vault_id, item_id)
            case Conflict(current):
                if current.item.deleted:
                    raise ItemDeleted
                # The latest change made exactly what was asked from base_version: this update, repeated.
                if current.item.version == base_version + 1 and patch.is_in(current.item):
                    return await self._answered(actor, request, current)
                raise VersionMismatch(current.item.version)
            case ItemChange() as change:
                return change
            case Repeated(answer):
                return answer
            case Reused():
                raise RequestIdReused

    async def _answered(self, actor: Actor, request: RequestId | None, change: ItemChange) -> ItemChange:
        """A repeat recognised by its content succeeds without a change: with a request id, its
        answer is recorded like a change's, so that a later repeat answers it, whatever changed."""
        if request is None:
            return change
        match await self._items.record_answer(actor, request, change):
            case Repeated(answer):  # a call with this id got there first
                return answer
            case Reused():
                raise RequestIdReused
        return change

    async def get_item(self, caller: Caller, vault_id: str, item_id: str) -> Item:
        """The item as last changed, a tombstone included."""
        caller.require_scope(Scope.VAULT_ITEMS_READ)
        caller.require_member(await self._directory.get_vault(vault_id))
        item = await self._items.get_item(vault_id, item_id)
        if item is None:
            raise _not_found(vault_id, item_id)
        return item

    async def list_items(
        self,
        caller: Caller,
        vault_id: str,
        page_size: int,
        page_token: str,
        show_deleted: bool,  # the request's field, in the RPC layer's shape
    ) -> ListedItems:
        """A page of the vault's items in item_id order, from the first page or from
        where `page_token` says the listing stands: at most `page_size` items (page_limit) and
        at most a page's bytes. A page token of another epoch than the store's is CursorExpired."""
        caller.require_scope(Scope.VAULT_ITEMS_READ)
        caller.require_member(await self._directory.get_vault(vault_id))
        size = page_limit(page_size)
        tenant_id = caller.tenant_id  # the vault's, as the caller is a member
        # A page token continues one listing: this tenant's, this vault's, with this filter.
        listing = (tenant_id, vault_id, "with tombstones" if show_deleted else "live")
        state = self._page_tokens.read(page_token, *listing) if page_token else None
        # One more than the page: a next page token only when there is something after it.
        page = await self._items.list_items(
            vault_id, "" if state is None else state.after, size + 1, show_deleted=show_deleted
        )
        if state is not None and state.epoch != page.epoch:
            # The store was restored since the listing began: its cursor means nothing any more.
            raise CursorExpired(page.epoch)
        items = page.items[:size]
        items = items[: fitting(items, self._sizes.item)]
        # The first page's snapshot fixes the listing's cursor; later pages carry it in their token.
        sequence = page.sequence if state is None else state.number
        next_page_token = ""
        if len(page.items) > len(items):  # cut by the page size or by its bytes: the next starts after
            next_page_token = self._page_tokens.issue(Position(sequence, items[-1].item_id, page.epoch), *listing)
        return ListedItems(items, next_page_token, sequence, page.epoch)

    async def list_vaults(self, caller: Caller, page_size: int, page_token: str) -> ListedVaults:
        """A page of the vaults the caller is a member of, by id, each with its members: at most
        `page_size` (page_limit) and at most a page's bytes. Whatever the caller's role: it may
        act only on vaults it is a member of, so it lists those."""
        caller.require_scope(Scope.VAULT_ITEMS_READ)
        size = page_limit(page_size)
        # A page token continues one caller's listing: the binding keeps it from another's.
        listing = (caller.tenant_id, caller.principal.principal_id, _VAULT_LISTING)
        after = self._page_tokens.read(page_token, *listing).after if page_token else ""
        found = await self._directory.list_member_vaults(caller.principal.principal_id, after, size + 1)
        page = found[:size]
        page = page[: fitting(page, self._sizes.vault)]
        next_page_token = ""
        if len(found) > len(page):  # cut by the page size or by its bytes: the next starts after
            next_page_token = self._page_tokens.issue(Position(0, page[-1].vault_id), *listing)
        # A member is of the vault's tenant (the stores refuse another): checked all the same, as
        # require_member does, so that no other tenant's vault is ever answered.
        return ListedVaults(tuple(v for v in page if v.tenant_id == caller.tenant_id), next_page_token)

    async def get_vault(self, caller: Caller, vault_id: str) -> Vault:
        """The vault with its members, if the caller is one of them."""
        caller.require_scope(Scope.VAULT_ITEMS_READ)
        return caller.require_member(await self._directory.get_vault(vault_id))


def _not_found(vault_id: str, item_id: str) -> ItemNotFound:
    return ItemNotFound(vault_id, item_id)
