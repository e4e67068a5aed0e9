"""Shared reads: one store read in flight per key, awaited by every watch that asks for it; and
batched reads: the reads by key that watches ask for in one step of the event loop, made as one.

One change to a vault wakes all its watches at once, and each would read the same page of
changes (and the same vault, for its membership) from the store: N watches, N reads. Here the
first watch to ask starts the read and the others woken by the same wake-up await the same
answer, so a change costs one read per vault, page and cursor, however many watch it.

Why no watch can get a page older than the change that woke it: the key holds the vault's
wake generation (ChangeSubscription.generation), which the change feed moves on every wake-up
of the vault's watches (a change, an access change, everything after a lost connection) and
never gives again, even to a vault that lost all its watches and got new ones. A read in flight
under a generation was therefore started after the wake-up that set it, so it sees every
change that wake-up announced and those before; a watch woken again after the read started
asks under the next generation, and gets a read of its own. A watch that subscribes while a
read of its generation is in flight may share a read started just before it subscribed: a
change committed in between is announced after the read started, so it moves the generation
before the watch asks, or wakes the watch once more after it did.

Only reads in flight are shared: an answer is forgotten as soon as it comes, nothing is
cached. A watch that stops waiting (it ended, or the store is known down) leaves the read to
the others; it ends by itself.

The watches woken by one change each check their own token again (different keys: nothing to
share), and on a database each such read is a round trip. Batched reads gather the keys asked for
in one step of the event loop, which is when the watches woken together ask, and read them all in
the next step, in one read: every asker's read starts after it asked, so it sees what committed
before (a revocation included), as a read of its own would.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Collection, Hashable, Mapping
from typing import Any, Generic, TypeVar

T = TypeVar("T")
K = TypeVar("K", bound=Hashable)


class SharedReads:
    def __init__(self) -> None:
        self._flying: dict[Hashable, asyncio.Future[Any]] = {}

    def read(self, key: Hashable, start: Callable[[], Awaitable[T]]) -> asyncio.Future[T]:
        """What `start()` answers, shared with whoever asks under the same key while it runs.
        The future answered is the asker's own: cancelling it leaves the read to the others."""
        flying = self._flying.get(key)
        if flying is None:
            flying = asyncio.ensure_future(start())
            self._flying[key] = flying
            flying.add_done_callback(lambda done: self._landed(key, done))
        return asyncio.shield(flying)

    def _landed(self, key: Hashable, done: asyncio.Future[Any]) -> None:
        del self._flying[key]
        if not done.cancelled():
            done.exception()  # taken by whoever waits, if anyone still does


class BatchedReads(Generic[K, T]):
    def __init__(self, read_many: Callable[[Collection[K]], Awaitable[Mapping[K, T]]]) -> None:
        self._read_many = read_many
        self._asked: dict[K, list[asyncio.Future[T | None]]] | None = None  # in this step
        self._flying: set[asyncio.Future[Mapping[K, T]]] = set()

    def read(self, key: K) -> asyncio.Future[T | None]:
        """What the read of `key` answers (None: nothing has it), read with the keys asked for in
        the same step. The future is the asker's own: cancelling it leaves the read to the others."""
        loop = asyncio.get_running_loop()
        if self._asked is None:
            self._asked = {}
            loop.call_soon(self._start)
        answer: asyncio.Future[T | None] = loop.create_future()
        self._asked.setdefault(key, []).append(answer)
        return answer

    def _start(self) -> None:
        asked, self._asked = self._asked or {}, None
        reading = asyncio.ensure_future(self._read_many(asked.keys()))
        self._flying.add(reading)
        reading.add_done_callback(lambda done: self._answer(asked, done))

    def _answer(self, asked: dict[K, list[asyncio.Future[T | None]]], done: asyncio.Future[Mapping[K, T]]) -> None:
        self._flying.discard(done)
        error = None if done.cancelled() else done.exception()
        found = {} if done.cancelled() or error is not None else done.result()
        for key, answers in asked.items():
            for answer in answers:
                if answer.done():  # its asker stopped waiting
                    continue
                if done.cancelled():
                    answer.cancel()
                elif error is not None:
                    answer.set_exception(error)
                else:
                    answer.set_result(found.get(key))
