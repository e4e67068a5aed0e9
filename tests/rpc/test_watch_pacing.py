"""WatchChanges' messages as the whole app sends them, in process, on a fake timer: the caught-up
marker ends the backlog (the first message, without changes, when there is none; the backlog's
last page otherwise), and a heartbeat comes a period after the last message, whatever came before
it, so that a quiet stream is never silent for longer.

The app is driven as an ASGI application directly, its body read frame by frame as it sends them
(httpx's in-process transport hands a stream over only at its end); each message is stamped with
the fake timer's time when it is sent. The timer moves only when a test moves it, and tells when
the watch waits and until when: what the test waits for, bounded in real time, never by sleeping.
"""

from __future__ import annotations

import asyncio
import contextlib
import struct
from collections.abc import AsyncIterator, MutableMapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from typing import Any

import pytest

from tests.actors import OPERATOR, at
from tests.unit.test_vault_items import content
from tests.world import PEPPER, FakeClock, World
from zkplatform.app import Server, create_app
from zkplatform.config import Settings
from zkplatform.domain.sync import WatchPolicy
from zkplatform.store.memory import MemoryStore
from zkplatform.wiring import Platform
from zkplatform_api.platform.v1 import vault_pb2

WATCH = "/platform.v1.VaultService/WatchChanges"
VAULT = "acme-shared"
SEEDED = 6
PERIOD = 15.0  # the default heartbeat period, in the fake timer's seconds
STEP = 10.0  # real seconds: bounds each wait for what must happen at once


class FakeTimer:
    """domain.sync.WatchTimer on a time that only `advance` moves. Every deadline the watch waits
    for is put on `waits`, so that a test knows when the watch is idle and until when."""

    def __init__(self) -> None:
        self.time = 0.0
        self.waits: asyncio.Queue[float] = asyncio.Queue()
        self._pending: list[tuple[float, asyncio.Timeout]] = []

    def now(self) -> float:
        return self.time

    def timeout_at(self, deadline: float) -> AbstractAsyncContextManager[object]:
        return self._timeout_at(deadline)

    @asynccontextmanager
    async def _timeout_at(self, deadline: float) -> AsyncIterator[None]:
        async with asyncio.timeout(None) as timeout:
            entry = (deadline, timeout)
            self._pending.append(entry)
            self._fire()
            self.waits.put_nowait(deadline)
            try:
                yield
            finally:
                self._pending.remove(entry)

    def advance(self, seconds: float) -> None:
        self.time += seconds
        self._fire()

    def _fire(self) -> None:
        """Ends the waits whose deadline has come, as the loop's own timeouts do: at once."""
        now = asyncio.get_running_loop().time()
        for deadline, timeout in self._pending:
            if deadline <= self.time:
                timeout.reschedule(now)

    async def next_wait(self) -> float:
        """The deadline of the next wait the watch begins."""
        return await asyncio.wait_for(self.waits.get(), STEP)


@dataclass(frozen=True)
class Sent:
    at: float  # the fake time it was sent at
    message: vault_pb2.WatchChangesResponse

    @property
    def sequences(self) -> list[int]:
        return [change.sequence for change in self.message.changes]


class Watch:
    """One WatchChanges call (Connect, binary) on the ASGI app: its messages as they are sent."""

    def __init__(self, app: Server, timer: FakeTimer, token: str, since: int) -> None:
        self.sent: asyncio.Queue[Sent] = asyncio.Queue()
        self._timer = timer
        self._buffer = b""
        self._gone = asyncio.Event()
        body = vault_pb2.WatchChangesRequest(vault_id=VAULT, since_sequence=since).SerializeToString()
        self._request: list[dict[str, Any]] = [
            {"type": "http.request", "body": struct.pack(">BI", 0, len(body)) + body, "more_body": False}
        ]
        scope = {
            "type": "http",
            "http_version": "1.1",
            "method": "POST",
            "scheme": "http",
            "path": WATCH,
            "query_string": b"",
            "headers": [
                (b"host", b"testserver"),
                (b"content-type", b"application/connect+proto"),
                (b"connect-protocol-version", b"1"),
                (b"authorization", f"Bearer {token}".encode()),
            ],
        }
        self._task = asyncio.ensure_future(app(scope, self._receive, self._send))

    async def _receive(self) -> dict[str, Any]:
        if self._request:
            return self._request.pop()
        await self._gone.wait()
        return {"type": "http.disconnect"}

    async def _send(self, event: MutableMapping[str, Any]) -> None:
        if event["type"] == "http.response.start":
            assert event["status"] == 200, event
        elif event["type"] == "http.response.body":
            self._buffer += event.get("body", b"")
            while len(self._buffer) >= 5:
                flags, size = struct.unpack(">BI", self._buffer[:5])
                if len(self._buffer) < 5 + size:
                    break
                frame, self._buffer = self._buffer[5 : 5 + size], self._buffer[5 + size :]
                assert flags == 0, frame  # the end of the stream: the watch failed
                message = vault_pb2.WatchChangesResponse.FromString(frame)
                self.sent.put_nowait(Sent(self._timer.now(), message))

    async def next(self) -> Sent:
        return await asyncio.wait_for(self.sent.get(), STEP)

    async def close(self) -> None:
        self._gone.set()
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task


@pytest.fixture
def timer() -> FakeTimer:
    return FakeTimer()


@pytest.fixture
def platform(clock: FakeClock, timer: FakeTimer) -> Platform:
    policy = WatchPolicy(heartbeat_seconds=PERIOD)
    return Platform.build(MemoryStore(), PEPPER, clock, watch_policy=policy, watch_timer=timer)


@pytest.fixture
async def watching(platform: Platform, timer: FakeTimer, world: World) -> AsyncIterator[Any]:
    app = create_app(Settings(), platform=platform)
    opened: list[Watch] = []

    def open_watch(since: int, principal: str = "bob") -> Watch:
        opened.append(Watch(app, timer, world.token(principal), since))
        return opened[-1]

    yield open_watch
    for watch in opened:
        await watch.close()


async def change(world: World, clock: FakeClock, item_id: str) -> None:
    item = content("x").new_item(item_id, "acme", VAULT, clock.now)
    await world.platform.store.add_items([item], at(clock.now))


async def test_a_heartbeat_comes_a_period_after_the_last_message(
    watching: Any, timer: FakeTimer, world: World, clock: FakeClock
) -> None:
    """Sent at 10, a change is followed by a heartbeat at 25: a heartbeat every period since the
    stream opened would have let 20 s go silent after it (none at 15, one at 30)."""
    watch = watching(since=SEEDED)
    opened = await watch.next()
    assert (opened.at, opened.sequences, opened.message.caught_up) == (0.0, [], True)
    assert await timer.next_wait() == PERIOD

    timer.advance(10)
    await change(world, clock, "new-1")
    changed = await watch.next()
    assert (changed.at, changed.sequences, changed.message.caught_up) == (10.0, [SEEDED + 1], False)
    assert await timer.next_wait() == 10 + PERIOD  # not 15: a message went at 10

    timer.advance(15)
    heartbeat = await watch.next()
    assert (heartbeat.at, heartbeat.sequences, heartbeat.message.caught_up) == (25.0, [], False)
    assert heartbeat.message.cursor.sequence == SEEDED + 1
    assert await timer.next_wait() == 25 + PERIOD

    timer.advance(15)  # quiet: one every period
    assert ((await watch.next()).at, await timer.next_wait()) == (40.0, 40 + PERIOD)
    assert watch.sent.empty()


async def test_the_marker_ends_a_backlog_of_several_pages(
    watching: Any, timer: FakeTimer, world: World, clock: FakeClock
) -> None:
    """A page holds 100 changes: a backlog of 156 comes in two, the second marked caught up; what
    comes after is live, and marked so by nothing."""
    more = [content("m").new_item(f"more-{n:03}", "acme", VAULT, clock.now) for n in range(150)]
    await world.platform.store.add_items(more, OPERATOR)

    watch = watching(since=0)
    first, second = await watch.next(), await watch.next()
    assert (len(first.sequences), first.message.caught_up) == (100, False)
    assert (len(second.sequences), second.message.caught_up) == (56, True)
    assert first.sequences + second.sequences == list(range(1, 157))
    assert second.message.cursor.sequence == 156

    await timer.next_wait()
    await change(world, clock, "live-1")
    live = await watch.next()
    assert (live.sequences, live.message.caught_up) == ([157], False)
    await timer.next_wait()
    timer.advance(PERIOD)
    heartbeat = await watch.next()
    assert (heartbeat.sequences, heartbeat.message.caught_up) == ([], False)


async def test_every_stream_has_its_own_marker(watching: Any, timer: FakeTimer) -> None:
    """A client that reconnects from its cursor is told again when it holds the whole vault."""
    backlog = watching(since=4)
    marked = await backlog.next()
    assert (marked.sequences, marked.message.caught_up) == ([5, 6], True)

    again = watching(since=SEEDED)
    reopened = await again.next()
    assert (reopened.sequences, reopened.message.caught_up, reopened.message.cursor.sequence) == ([], True, SEEDED)
