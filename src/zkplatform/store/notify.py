"""The change feed of one worker: which watches wait on which vault, and what wakes them.

Each store gives its worker one ChangeFeed. Watches subscribe per vault and token; a
wake-up is a flag, not a message, so a subscription holds the same few bytes however
many changes it has not yet looked at, and a burst of changes costs one wake-up per
watch. The woken watch reads what is new from the store itself (ListChanges pages
after its cursor), so a coalesced or lost notification delays a change, never loses
it. A second flag says the caller's access may have changed (its token revoked, its
principal's scopes narrowed, a member removed from the vault): the watch then checks its
token, scopes and membership again before it sends anything, so a quiet watch ends at
once instead of at its next heartbeat. A third says the store is known down (domain/readiness.py
calls `store_down`): every watch then ends at once, whether it waits or reads, with nothing
waiting for it but the flag. What sets the first two depends on the store:

- memory: the store itself, after each change, revocation or removal (in process);
- SQLite: its own writes at once, and a poller for other processes on the file:
  `PRAGMA data_version` every POLL_INTERVAL_SECONDS, then the subscribed vaults'
  sequences and membership marks and the count of revocations (bumped by triggers,
  migration 0005, and by a narrowing of a principal's scopes) only when it moved, and
  only while watches are open;
- PostgreSQL: one LISTEN connection per worker, fed by triggers on items (migration
  0004), on tokens and on vault_members (migration 0006), and by a narrowing of a
  principal's scopes (a revocation's payload for each of its live tokens), for every
  worker and host on the database.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Coroutine, Iterable
from dataclasses import dataclass
from typing import Any

from zkplatform.domain.errors import StoreUnavailable

log = logging.getLogger(__name__)

POLL_INTERVAL_SECONDS = 0.2
# The PostgreSQL notification channel. Payloads: "<sequence> <vault id>" (a change),
# "access <vault id>" (a member left the vault), "revoked <token id>" (the token revoked, or its
# principal's scopes narrowed).
CHANNEL = "zk_changes"


class Subscription:
    """One watch's three flags: its vault may have changed; its caller's access may have too;
    the store is known down (a future, so that a read can be raced with it without a task)."""

    __slots__ = ("_access", "_feed", "_woken", "down", "token_id", "vault_id")

    def __init__(self, feed: ChangeFeed, vault_id: str, token_id: str) -> None:
        self._feed = feed
        self._woken = asyncio.Event()
        self._access = False
        self.down: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.vault_id = vault_id
        self.token_id = token_id

    async def wait(self) -> bool:
        """Return once the vault may have changed; True when the caller's access may have too.
        StoreUnavailable once the store is known down."""
        await self._woken.wait()
        if self.down.done():
            raise StoreUnavailable
        self._woken.clear()
        access, self._access = self._access, False
        return access

    @property
    def generation(self) -> int:
        return self._feed.generation(self.vault_id)

    def wake(self) -> None:
        self._woken.set()

    def wake_access(self) -> None:
        self._access = True
        self._woken.set()

    def wake_down(self) -> None:
        if not self.down.done():
            self.down.set_result(None)
        self._woken.set()

    def close(self) -> None:
        self._feed.unsubscribe(self)


class ChangeFeed:
    """Subscriptions per vault and per token. `on_first` and `on_last` start and stop what
    watches the store for other processes (a poller), so that nothing runs while no watch
    is open."""

    def __init__(
        self, on_first: Callable[[], None] | None = None, on_last: Callable[[], Coroutine[Any, Any, None]] | None = None
    ) -> None:
        self._by_vault: dict[str, set[Subscription]] = {}
        self._by_token: dict[str, set[Subscription]] = {}
        self._count = 0
        self._on_first = on_first
        self._on_last = on_last
        self._stopping: asyncio.Task[None] | None = None  # held so that it is not collected mid-way
        self._lost: list[Callable[[], None]] = []
        # Each subscribed vault's wake generation: the feed's wake-ups so far when its watches
        # were last woken (or its first subscribed), so that no generation is ever given twice.
        self._generations: dict[str, int] = {}
        self._wakes = 0

    def subscribe(self, vault_id: str, token_id: str) -> Subscription:
        subscription = Subscription(self, vault_id, token_id)
        if vault_id not in self._by_vault:
            self._woke(vault_id)
        self._by_vault.setdefault(vault_id, set()).add(subscription)
        self._by_token.setdefault(token_id, set()).add(subscription)
        self._count += 1
        if self._count == 1 and self._on_first is not None:
            self._on_first()
        return subscription

    def unsubscribe(self, subscription: Subscription) -> None:
        subscribers = self._by_vault.get(subscription.vault_id)
        if subscribers is None or subscription not in subscribers:
            return
        _discard(self._by_vault, subscription.vault_id, subscription)
        if subscription.vault_id not in self._by_vault:
            del self._generations[subscription.vault_id]
        _discard(self._by_token, subscription.token_id, subscription)
        self._count -= 1
        if self._count == 0 and self._on_last is not None:
            # Stopping may await (a task's end); the last watch leaving must not.
            self._stopping = asyncio.get_running_loop().create_task(self._on_last())

    def vaults(self) -> list[str]:
        return list(self._by_vault)

    def generation(self, vault_id: str) -> int:
        return self._generations[vault_id]

    def _woke(self, vault_id: str) -> None:
        self._wakes += 1
        self._generations[vault_id] = self._wakes

    def on_lost(self, callback: Callable[[], None]) -> None:
        """`callback` is called whenever the connection carrying other processes' changes ends."""
        self._lost.append(callback)

    def lost(self) -> None:
        """The connection carrying other processes' changes ended: the store may be down."""
        for callback in self._lost:
            callback()

    def notify(self, vault_id: str) -> None:
        """The vault changed."""
        if vault_id in self._by_vault:
            self._woke(vault_id)
        for subscription in self._by_vault.get(vault_id, ()):
            subscription.wake()

    def access_changed(self, vault_id: str) -> None:
        """A member left the vault: each of its watches checks its caller again."""
        if vault_id in self._by_vault:
            self._woke(vault_id)
        for subscription in self._by_vault.get(vault_id, ()):
            subscription.wake_access()

    def revoked(self, token_ids: Iterable[str]) -> None:
        """The tokens were revoked, or their principal's scopes narrowed: each of their watches
        checks its caller again."""
        for token_id in token_ids:
            for subscription in self._by_token.get(token_id, ()):
                subscription.wake_access()

    def store_down(self) -> None:
        """The store is known down: every watch ends, whether it waits or reads."""
        for subscribers in self._by_vault.values():
            for subscription in subscribers:
                subscription.wake_down()

    def wake_all(self) -> None:
        """Anything may have changed, access included (what was missed is not known): every
        watch reads and checks again. Two reads by key each, so only for rare events."""
        for vault_id, subscribers in self._by_vault.items():
            self._woke(vault_id)
            for subscription in subscribers:
                subscription.wake_access()


def _discard(index: dict[str, set[Subscription]], key: str, subscription: Subscription) -> None:
    subscribers = index[key]
    subscribers.discard(subscription)
    if not subscribers:
        del index[key]


@dataclass(frozen=True, slots=True)
class Marks:
    """What the poller compares from one look at the store to the next: each subscribed
    vault's (sequence, membership mark), and the count of revocations. Each only grows."""

    vaults: dict[str, tuple[int, int]]
    revocations: int


class Poller:
    """Runs `check` every POLL_INTERVAL_SECONDS while started: it answers the marks of the
    subscribed vaults when the store may have changed since its last call (None when it
    surely did not), and the poller wakes the watches of the vaults whose sequence moved,
    and checks again the access of those whose membership mark moved (or that are new) or
    of every watch when the revocations did: which token it was, a count does not say."""

    def __init__(
        self, feed_of: Callable[[], ChangeFeed], check: Callable[[list[str]], Awaitable[Marks | None]]
    ) -> None:
        self._feed_of = feed_of
        self._check = check
        self._task: asyncio.Task[None] | None = None
        self._known: dict[str, tuple[int, int]] = {}
        self._revocations: int | None = None  # None: not looked at since started

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
        self._revocations = None

    def saw(self, vault_id: str, sequence: int) -> None:
        """This process changed the vault and woke its watches itself: the next poll need not."""
        if (known := self._known.get(vault_id)) is not None:
            self._known[vault_id] = (max(known[0], sequence), known[1])

    async def _run(self) -> None:
        while True:
            feed = self._feed_of()
            try:
                marks = await self._check(feed.vaults())
            except Exception:
                log.exception("polling the store for changes failed; trying again")
                marks = None
            if marks is not None:
                self._wake(feed, marks)
            await asyncio.sleep(POLL_INTERVAL_SECONDS)

    def _wake(self, feed: ChangeFeed, marks: Marks) -> None:
        if marks.revocations != self._revocations:
            feed.wake_all()
        else:
            for vault_id, (sequence, membership) in marks.vaults.items():
                known = self._known.get(vault_id)
                if known is None or known[1] != membership:
                    feed.access_changed(vault_id)
                elif known[0] != sequence:
                    feed.notify(vault_id)
        self._known, self._revocations = marks.vaults, marks.revocations


def deliver(feed: ChangeFeed, payload: str) -> None:
    """Wake the watches a notification on CHANNEL concerns."""
    kind, _, rest = payload.partition(" ")
    if kind == "access":
        feed.access_changed(rest)
    elif kind == "revoked":
        feed.revoked((rest,))
    else:  # "<sequence> <vault id>"
        feed.notify(rest)


class Listener:
    """PostgreSQL: one connection of this worker LISTENs on CHANNEL for every watch of it.
    Started with the first watch and kept until the store closes; when the connection
    drops it reconnects and wakes every watch (what was missed meanwhile, a revocation
    included, is read and checked then)."""

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
                    self._feed_of().wake_all()
                    async for notification in conn.notifies():
                        deliver(self._feed_of(), notification.payload)
            except (psycopg.Error, OSError) as error:
                log.warning("listening for changes on %s failed (%s); reconnecting", self._display_url, error)
                # Readiness probes at once: the watches end as soon as the store is known down.
                self._feed_of().lost()
                await asyncio.sleep(next(delays, 1.0))
