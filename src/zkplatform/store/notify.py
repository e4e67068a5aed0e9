"""The change feed of one worker: which watches wait on which vault, and what wakes them.

Each store gives its worker one ChangeFeed. Watches subscribe per vault; a wake-up
is a flag, not a message, so a subscription holds the same few bytes however many
changes it has not yet looked at, and a burst of changes costs one wake-up per
watch. The woken watch reads what is new from the store itself (ListChanges pages
after its cursor), so a coalesced or lost notification delays a change, never
loses it. What sets the flags depends on the store:

- memory: the store itself, after each change (in process);
- SQLite: its own writes at once, and a poller for other processes on the file:
  `PRAGMA data_version` every POLL_INTERVAL_SECONDS, then the sequences of the
  subscribed vaults only when it moved, and only while watches are open;
- PostgreSQL: one LISTEN connection per worker, fed by a trigger on items
  (migration 0004), for every worker and host on the database.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

log = logging.getLogger(__name__)

POLL_INTERVAL_SECONDS = 0.2
CHANNEL = "zk_changes"  # the PostgreSQL notification channel; payload "<sequence> <vault id>"


class Subscription:
    __slots__ = ("_feed", "_woken", "vault_id")

    def __init__(self, feed: ChangeFeed, vault_id: str) -> None:
        self._feed = feed
        self._woken = asyncio.Event()
        self.vault_id = vault_id

    async def wait(self) -> None:
        await self._woken.wait()
        self._woken.clear()

    def wake(self) -> None:
        self._woken.set()

    def close(self) -> None:
        self._feed.unsubscribe(self)


class ChangeFeed:
    """Subscriptions per vault. `on_first` and `on_last` start and stop what watches the
    store for other processes (a poller), so that nothing runs while no watch is open."""

    def __init__(
        self, on_first: Callable[[], None] | None = None, on_last: Callable[[], Coroutine[Any, Any, None]] | None = None
    ) -> None:
        self._by_vault: dict[str, set[Subscription]] = {}
        self._count = 0
        self._on_first = on_first
        self._on_last = on_last
        self._stopping: asyncio.Task[None] | None = None  # held so that it is not collected mid-way

    def subscribe(self, vault_id: str) -> Subscription:
        subscription = Subscription(self, vault_id)
        self._by_vault.setdefault(vault_id, set()).add(subscription)
        self._count += 1
        if self._count == 1 and self._on_first is not None:
            self._on_first()
        return subscription

    def unsubscribe(self, subscription: Subscription) -> None:
        subscribers = self._by_vault.get(subscription.vault_id)
        if subscribers is None or subscription not in subscribers:
            return
        subscribers.discard(subscription)
        if not subscribers:
            del self._by_vault[subscription.vault_id]
        self._count -= 1
        if self._count == 0 and self._on_last is not None:
            # Stopping may await (a task's end); the last watch leaving must not.
            self._stopping = asyncio.get_running_loop().create_task(self._on_last())

    def vaults(self) -> list[str]:
        return list(self._by_vault)

    def notify(self, vault_id: str) -> None:
        for subscription in self._by_vault.get(vault_id, ()):
            subscription.wake()

    def notify_all(self) -> None:
        for subscribers in self._by_vault.values():
            for subscription in subscribers:
                subscription.wake()


class Poller:
    """Runs `check` every POLL_INTERVAL_SECONDS while started: it answers the subscribed
    vaults' sequences when the store may have changed since its last call (None when it
    surely did not), and the poller wakes the vaults whose sequence moved (or is new)."""

    def __init__(
        self, feed_of: Callable[[], ChangeFeed], check: Callable[[list[str]], Awaitable[dict[str, int] | None]]
    ) -> None:
        self._feed_of = feed_of
        self._check = check
        self._task: asyncio.Task[None] | None = None
        self._known: dict[str, int] = {}

    def start(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        if self._feed_of().vaults():
            return  # a watch came back before this ran: keep polling for it
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._known.clear()

    def saw(self, vault_id: str, sequence: int) -> None:
        """This process changed the vault and woke its watches itself: the next poll need not."""
        if vault_id in self._known:
            self._known[vault_id] = max(self._known[vault_id], sequence)

    async def _run(self) -> None:
        while True:
            feed = self._feed_of()
            try:
                sequences = await self._check(feed.vaults())
            except Exception:
                log.exception("polling the store for changes failed; trying again")
                sequences = None
            if sequences is not None:
                for vault_id, sequence in sequences.items():
                    if self._known.get(vault_id) != sequence:
                        feed.notify(vault_id)
                self._known = sequences
            await asyncio.sleep(POLL_INTERVAL_SECONDS)


def parse_payload(payload: str) -> str:
    """The vault id of a notification's payload ("<sequence> <vault id>")."""
    return payload.partition(" ")[2]


class Listener:
    """PostgreSQL: one connection of this worker LISTENs on CHANNEL for every watch of it.
    Started with the first watch and kept until the store closes; when the connection
    drops it reconnects and wakes every watch (what was missed meanwhile is read then)."""

    def __init__(self, feed_of: Callable[[], ChangeFeed], url: str, display_url: str) -> None:
        self._feed_of = feed_of
        self._url = url
        self._display_url = display_url
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _run(self) -> None:
        import psycopg  # noqa: PLC0415 # only the PostgreSQL store loads it

        delays = iter((0.1, 0.2, 0.5, 1.0))
        while True:
            try:
                async with await psycopg.AsyncConnection.connect(self._url, autocommit=True) as conn:
                    await conn.execute(f"LISTEN {CHANNEL}")
                    delays = iter((0.1, 0.2, 0.5, 1.0))
                    # Whatever committed before LISTEN took effect was not announced to us.
                    self._feed_of().notify_all()
                    async for notification in conn.notifies():
                        self._feed_of().notify(parse_payload(notification.payload))
            except (psycopg.Error, OSError) as error:
                log.warning("listening for changes on %s failed (%s); reconnecting", self._display_url, error)
                await asyncio.sleep(next(delays, 1.0))
