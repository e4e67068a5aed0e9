"""Vault use cases."""

from __future__ import annotations

from zkplatform.domain.auth import Caller
from zkplatform.domain.clock import Clock
from zkplatform.domain.errors import NotFound, VersionMismatch
from zkplatform.domain.models import Scope, Tombstone
from zkplatform.repository import DirectoryRepository, ItemRepository, Missing, Stale


class VaultUseCases:
    def __init__(self, directory: DirectoryRepository, items: ItemRepository, clock: Clock) -> None:
        self._directory = directory
        self._items = items
        self._clock = clock

    async def delete_item(self, caller: Caller, vault_id: str, item_id: str, base_version: int) -> Tombstone:
        """Delete a live item at base_version, or return the tombstone of an earlier delete."""
        caller.require_scope(Scope.VAULT_ITEMS_DELETE)
        caller.require_member(await self._directory.get_vault(vault_id))
        match await self._items.delete_item(vault_id, item_id, base_version, self._clock()):
            case Tombstone() as tombstone:
                return tombstone
            case Stale(current_version):
                raise VersionMismatch(current_version)
            case Missing():
                msg = f"no item {item_id} in vault {vault_id}"
                raise NotFound(msg)
