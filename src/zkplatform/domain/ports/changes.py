"""The change feed that wakes a vault's watches."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Protocol


class ChangeSubscription(Protocol):
    """One watch's interest in a vault's changes and in its caller's access. Notifications
    coalesce: one wake-up may stand for any number of changes, so the watcher reads what is
    new itself."""

    @property
    def generation(self) -> int:
        """The vault's wake generation: it moves on every wake-up of the vault's watches (a change,
        an access change, all of them at once) and never comes back, whatever watches come and go,
        so that a read started under one has seen what its wake-up announced."""
        ...

    @property
    def down(self) -> asyncio.Future[None]:
        """Done once the store is known down (`ChangeFeed.store_down`)."""
        ...

    async def wait(self) -> bool:
        """Return once the vault may have changed since the last return (or the subscription);
        True when the watch's token may have been revoked, its principal's scopes narrowed or a
        member removed from the vault since then too (the watcher checks them again: the
        wake-up does not say whose). StoreUnavailable once the store is known down."""
        ...

    def close(self) -> None: ...


class ChangeFeed(Protocol):
    """Wakes the watches of a vault when it changes, and those whose access may have changed
    (the token revoked, its principal's scopes narrowed, a member removed from the vault),
    whichever worker or host changed it. One per worker and store, shared by all its watches."""

    def subscribe(self, vault_id: str, token_id: str) -> ChangeSubscription: ...

    def store_down(self) -> None:
        """The store is known down: every subscription's `down` is done, and its `wait` raises."""
        ...

    def on_lost(self, callback: Callable[[], None]) -> None:
        """Have `callback` called whenever what carries other processes' changes to this feed
        loses its connection to the store (PostgreSQL's LISTEN connection): the store may be down.
        A feed that holds no connection never calls it."""
        ...
