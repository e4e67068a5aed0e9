"""Sync use cases: the changes of a vault after a cursor, listed (ListChanges) or watched
(WatchChanges).

A cursor is a vault sequence number. Each item row keeps the sequence of its latest
change, so the changes after a cursor are the items whose sequence is above it, in
ascending sequence, each once, in its latest state (a tombstone for a delete). An item
that changes again while a client pages moves past the page it was on and comes again
later: nothing is missed, and a client keeps the higher version.

A cursor belongs to one history of the store: its epoch, which changes when the store is
restored from a backup (`zkplatform admin epoch rotate`), since the restored store numbers
its changes again from where the backup stood. A client that sends the epoch of its cursor
(`since_epoch`) is told to start over (CursorExpired) when it is not the store's any more;
one that does not is trusted, as before epochs existed.

Both check, in this order: the token's scope, the caller's membership of the vault in
its tenant (a vault that does not exist answers the same), then the cursor against the
store's epoch, the vault's purge horizon and its latest sequence, read in the same
snapshot as the page.

Every page (a ListChanges answer, a WatchChanges message) holds as many changes as fit
in its answer's PAGE_BYTES (paging.py): `has_more` says whether more follow.

A watch is pull-driven: it reads the next page only once the previous message was
taken, and what wakes it is a flag (store/notify.py). So a slow client holds at most
one page of memory; the backlog stays in the store. A live watch that finds itself more
than `max_lag` changes behind the vault ends with WatchBehind: its client resumes with
pages from its last cursor, which is cheaper for both than a stream that never catches up.
A watch ends with StoreUnavailable as soon as the store is known down (domain/readiness.py),
whether it waits for changes or reads the store (the read is then left to end by itself),
rather than at its next read, which would wait for a connection that cannot come.

The message that ends the backlog is marked caught up (the first message, without changes,
when there is none): from it on the client holds the whole vault. A heartbeat (a message
without changes) follows the last message by a heartbeat period whenever nothing was sent
since, so that a quiet stream is never silent for longer than that; the period is measured
on a WatchTimer (the event loop's clock; tests move a fake one).

A watch checks its token, its principal's scopes and its caller's membership again (two
reads by key) after it subscribes, before every page it sends, before every heartbeat, and
as soon as the feed says its access may have changed (its token revoked, its principal's
scopes narrowed, a member removed from the vault, by any worker or host): a quiet watch of
a revoked token ends at once, not at its next heartbeat, and nothing committed after the
revocation reaches it.

The watches of a vault woken by the same wake-up share one read of its next page and one of
the vault (its membership), not one each (domain/shared_reads.py says why none gets a page older
than the change that woke it); the tokens of the watches that check theirs in the same step of
the event loop are read together, in one read that starts after each of them asked.
"""

from __future__ import annotations

import asyncio
from asyncio import FIRST_COMPLETED
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterator
from contextlib import AbstractAsyncContextManager, contextmanager
from dataclasses import dataclass, replace
from functools import partial
from typing import Any, Protocol, TypeVar

from zkplatform.domain.auth import Caller
from zkplatform.domain.clock import Clock
from zkplatform.domain.errors import (
    CursorAhead,
    CursorExpired,
    FieldViolation,
    InvalidArgument,
    StoreUnavailable,
    TokenExpired,
    TokenRevoked,
    WatchBehind,
    WatchesExceeded,
)
from zkplatform.domain.models import ChangePage, ItemChange, Scope
from zkplatform.domain.paging import DEFAULT_PAGE_SIZE, ElementSizes, fitting, page_limit
from zkplatform.domain.ports.changes import ChangeFeed, ChangeSubscription
from zkplatform.domain.ports.directory import DirectoryRepository
from zkplatform.domain.ports.items import ItemRepository
from zkplatform.domain.ports.tokens import TokenRepository
from zkplatform.domain.readiness import Readiness
from zkplatform.domain.shared_reads import BatchedReads, SharedReads

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class ListedChanges:
    """A page of changes, where to resume after it (a sequence in the store's epoch), and
    whether more follow at once. On a watch, a page without changes is a heartbeat, unless it
    is the one that ends the backlog (`caught_up`, once a watch)."""

    changes: tuple[ItemChange, ...]
    cursor: int
    has_more: bool
    epoch: str
    caught_up: bool = False


@dataclass(frozen=True, slots=True)
class WatchPolicy:
    heartbeat_seconds: float = 15
    max_per_principal: int = 10
    max_per_worker: int = 1000
    # Changes a live watch may lag behind its vault before it is told to resume from its cursor.
    max_lag: int = 10_000


class WatchTimer(Protocol):
    """Monotonic seconds, and deadlines on them: what paces a watch's heartbeats."""

    def now(self) -> float: ...

    def timeout_at(self, deadline: float) -> AbstractAsyncContextManager[object]:
        """A block that raises TimeoutError once now() reaches `deadline`."""
        ...


class LoopTimer:
    """The running event loop's clock."""

    def now(self) -> float:
        return asyncio.get_running_loop().time()

    def timeout_at(self, deadline: float) -> AbstractAsyncContextManager[object]:
        return asyncio.timeout_at(deadline)


class WatchSlots:
    """The open watches of this worker, counted per principal."""

    def __init__(self, policy: WatchPolicy) -> None:
        self._policy = policy
        self._by_principal: dict[str, int] = {}
        self.total = 0

    @contextmanager
    def take(self, principal_id: str) -> Iterator[None]:
        policy = self._policy
        if self.total >= policy.max_per_worker:
            msg = f"this server has {policy.max_per_worker} open watches, its most; call again (another may answer)"
            raise WatchesExceeded(msg, 1, policy.max_per_worker, per_principal=False)
        held = self._by_principal.get(principal_id, 0)
        if held >= policy.max_per_principal:
            msg = f"the caller has {policy.max_per_principal} open watches, its most; close one first"
            raise WatchesExceeded(msg, 5, policy.max_per_principal, per_principal=True)
        self._by_principal[principal_id] = held + 1
        self.total += 1
        try:
            yield
        finally:
            self.total -= 1
            if self._by_principal[principal_id] == 1:
                del self._by_principal[principal_id]
            else:
                self._by_principal[principal_id] -= 1


class SyncUseCases:
    def __init__(  # noqa: PLR0913, PLR0917 # the ports it reads, and its settings
        self,
        directory: DirectoryRepository,
        items: ItemRepository,
        tokens: TokenRepository,
        feed: ChangeFeed,
        clock: Clock,
        sizes: ElementSizes,
        policy: WatchPolicy | None = None,
        timer: WatchTimer | None = None,
        readiness: Readiness | None = None,
    ) -> None:
        self._directory = directory
        self._items = items
        self._tokens = tokens
        self._feed = feed
        self._clock = clock
        self._sizes = sizes
        self._policy = policy or WatchPolicy()
        self._timer = timer or LoopTimer()
        self._readiness = readiness
        if readiness is not None:  # a watch ends once the store is known down
            readiness.on_down(feed.store_down)
        self._abandoned: set[asyncio.Future[Any]] = set()  # reads of watches that ended first
        self.slots = WatchSlots(self._policy)
        self._shared = SharedReads()  # the reads of a vault's watches woken by the same wake-up
        self._tokens_read = BatchedReads(tokens.get_tokens_with_principals)  # the re-checks of a step, as one read

    async def list_changes(
        self, caller: Caller, vault_id: str, since_sequence: int, page_size: int, since_epoch: str = ""
    ) -> ListedChanges:
        """The changes of the vault after `since_sequence` (of the epoch `since_epoch`, when
        given), at most `page_size` (page_limit) and at most a page's bytes."""
        await self._check_caller(caller, vault_id)
        size = page_limit(page_size)
        _check_since(since_sequence)
        page = await self._read(vault_id, since_sequence, size, since_epoch)
        return self._listed(page, since_sequence, size)

    async def watch_changes(
        self, caller: Caller, vault_id: str, since_sequence: int, since_epoch: str = ""
    ) -> AsyncGenerator[ListedChanges, None]:
        """The changes after `since_sequence` (of the epoch `since_epoch`, when given) as pages,
        the last of the backlog marked caught up, then each change as it commits, with a
        heartbeat (a page without changes) a heartbeat period after the last page sent when
        nothing was sent since; the token and the membership are checked again before every
        page and heartbeat and when the feed says they may have changed, and the store's epoch
        with every page and heartbeat. Ends only by raising."""
        await self._check_caller(caller, vault_id)
        _check_since(since_sequence)
        with self.slots.take(caller.principal.principal_id):
            # Subscribed before the first read and the first re-check: a change or a revocation
            # committed after it wakes the watch.
            subscription = self._feed.subscribe(vault_id, caller.token.token_id)
            try:
                if self._readiness is not None and self._readiness.known_down:  # the feed flagged those before it
                    raise StoreUnavailable
                async for listed in self._follow(caller, vault_id, since_sequence, since_epoch, subscription):
                    yield listed
            finally:
                subscription.close()

    async def _follow(
        self, caller: Caller, vault_id: str, cursor: int, epoch: str, subscription: ChangeSubscription
    ) -> AsyncIterator[ListedChanges]:
        """`epoch` is the one the cursor belongs to: the client's, or else the store's as the
        first page finds it; from then on every page must be of it."""
        timer, period = self._timer, self._policy.heartbeat_seconds
        quiet_until = timer.now() + period  # a heartbeat is due then, unless a message goes first
        caught_up = False  # the backlog was read to its end, and the client told so
        woken = True  # the vault may have changed since it was last read
        # The token or the membership may have changed since they were last read: at first, a
        # revocation announced before the subscription reached no one.
        access = True
        while True:
            if self._clock() >= caller.token.expires_at:
                raise TokenExpired
            due = timer.now() >= quiet_until
            if access or due:  # a revoked token or a removed member ends here, before anything is sent
                await self._unless_down(subscription, self._recheck(caller, vault_id, subscription.generation))
                access = False
            if due and caught_up:  # before, the backlog is being read: its next page comes at once
                # A quiet vault reads no page: the epoch is read here, so that a store restored
                # (and its epoch rotated) under an open watch ends it within a heartbeat period.
                # Shared with the heartbeats that come while it runs (queued for a connection, say).
                current = self._shared.read(("epoch",), self._items.epoch)
                epoch = _same_epoch(epoch, await self._unless_down(subscription, current))
                yield ListedChanges((), cursor, has_more=False, epoch=epoch)
                # Measured from when the message was taken: a pull-driven stream asks for the next then.
                quiet_until = timer.now() + period
            if woken:  # else a heartbeat period went by without a change: nothing to read
                generation, size = subscription.generation, DEFAULT_PAGE_SIZE
                listing = self._shared.read(
                    ("changes", vault_id, cursor, size, generation),
                    partial(self._items.list_changes, vault_id, cursor, size + 1),
                )
                page = _usable(await self._unless_down(subscription, listing), cursor, epoch)
                epoch = page.epoch
                listed = self._listed(page, cursor, DEFAULT_PAGE_SIZE)
                if page.changes:
                    if caught_up and page.sequence - cursor > self._policy.max_lag:
                        raise WatchBehind
                    # Nothing reaches a caller whose token or membership went since the last check.
                    await self._unless_down(subscription, self._recheck(caller, vault_id, subscription.generation))
                if page.changes or not caught_up:  # a page, or the empty backlog's marker
                    ends_backlog = not caught_up and not listed.has_more
                    cursor = listed.cursor
                    yield replace(listed, caught_up=ends_backlog)
                    quiet_until = timer.now() + period
                    caught_up = caught_up or ends_backlog
                    if listed.has_more:
                        continue
            woken, access = await self._wait(subscription, quiet_until)

    async def _wait(self, subscription: ChangeSubscription, deadline: float) -> tuple[bool, bool]:
        """Whether the vault may have changed before the deadline (the feed wakes every
        watch of a vault on each of its changes, from any worker or host), and whether the
        caller's access may have (a revocation, a member removed). StoreUnavailable as soon as
        the store is known down (the feed flags every subscription then), rather than at the
        next read, which would wait for a connection that cannot come. A wake-up that comes
        with the deadline is not lost: its flag stays set for the next wait."""
        try:
            async with self._timer.timeout_at(deadline):
                return True, await subscription.wait()
        except TimeoutError:
            return False, False

    async def _unless_down(self, subscription: ChangeSubscription, operation: Awaitable[T]) -> T:
        """A watch's read of the store (a coroutine, or a shared read's future), unless the store
        is known down first (the subscription's flag): StoreUnavailable then, at once. The read
        runs in a task of its own so that it can be left to end by itself (cancelled, its driver
        may wait on a network that drops packets for seconds more), held until it has."""
        reading = asyncio.ensure_future(operation)
        read = False
        try:
            if not subscription.down.done():
                await asyncio.wait((reading, subscription.down), return_when=FIRST_COMPLETED)
            read = reading.done()
        finally:
            if not read:  # a shared read's future is done once cancelled: its read goes on for the others
                reading.cancel()
                self._abandoned.add(reading)
                reading.add_done_callback(_forgotten(self._abandoned))
        if read:
            return reading.result()
        raise StoreUnavailable

    async def _check_caller(self, caller: Caller, vault_id: str) -> None:
        caller.require_scope(Scope.VAULT_ITEMS_READ)
        caller.require_member(await self._directory.get_vault(vault_id))

    async def _recheck(self, caller: Caller, vault_id: str, generation: int) -> None:
        """What may have changed since the watch opened: the token (revoked, expired; disabling
        a principal revokes its tokens in the same transaction), its principal's scopes (an
        operator may narrow them) and the membership. Two reads by key, before each page, once
        a quiet heartbeat period and when the feed says so; the vault's is shared by the watches
        woken by the same wake-up (`generation`, the subscription's), the token's read with those
        the other watches ask for in the same step."""
        found = await self._tokens_read.read(caller.token.token_id)
        if found is None or found[0].revoked:
            raise TokenRevoked
        token, principal = found
        if not token.is_live(self._clock()):
            raise TokenExpired
        replace(caller, token=token, principal=principal).require_scope(Scope.VAULT_ITEMS_READ)
        vault = self._shared.read(("vault", vault_id, generation), partial(self._directory.get_vault, vault_id))
        caller.require_member(await vault)

    async def _read(self, vault_id: str, since: int, size: int, epoch: str) -> ChangePage:
        """The changes after `since`, at most `size` and one more (has_more only when something
        follows), once the cursor is found usable against the page's own snapshot: of the
        store's epoch, unless `epoch` is "" (not given); not below the purge horizon, unless it
        is 0 (from the start: everything that exists, whatever was purged); not beyond the vault."""
        return _usable(await self._items.list_changes(vault_id, since, size + 1), since, epoch)

    def _listed(self, page: ChangePage, since: int, size: int) -> ListedChanges:
        """The page of at most `size` changes and a page's bytes, and where to resume after it."""
        changes = page.changes[:size]
        changes = changes[: fitting(changes, self._sizes.change)]
        cursor = changes[-1].sequence if changes else since
        return ListedChanges(changes, cursor, has_more=len(page.changes) > len(changes), epoch=page.epoch)


def _forgotten(held: set[asyncio.Future[Any]]) -> Callable[[asyncio.Future[Any]], None]:
    """What forgets an abandoned read once it has ended, its outcome taken (nobody waits for it)."""

    def forget(reading: asyncio.Future[Any]) -> None:
        held.discard(reading)
        if not reading.cancelled():
            reading.exception()

    return forget


def _usable(page: ChangePage, since: int, epoch: str) -> ChangePage:
    """The page, once the cursor `since` is found usable against its snapshot (see _read)."""
    _same_epoch(epoch, page.epoch)
    if 0 < since < page.purge_horizon:
        raise CursorExpired(page.epoch, page.purge_horizon)
    if since > page.sequence:
        raise CursorAhead(page.sequence)
    return page


def _same_epoch(expected: str, current: str) -> str:
    """The store's current epoch, if it is the one expected ("": none yet); CursorExpired otherwise."""
    if expected and expected != current:
        raise CursorExpired(current)
    return current


def _check_since(since_sequence: int) -> None:
    if since_sequence < 0:
        raise InvalidArgument([FieldViolation("sinceSequence", "must be 0 or more")])
