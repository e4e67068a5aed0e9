"""What a worker holds for clients that do not read, and when it gives them up.

An answer waits in memory until its client takes it: connectrpc builds each message whole,
and a send returns only once the client has taken (nearly all of) it, through HTTP/2 flow
control or the socket's buffer. A client that reads nothing holds the message for as long
as it likes: six hundred unread ListItems answers of 3 MiB over a few HTTP/2 connections
took a worker to GiBs (issue 39). So a message is written in chunks of CHUNK_BYTES, each
send returning once its client has taken the one before, and the part not yet taken (the
message's "unread" bytes) is bounded three ways:

- in time: a chunk that waits `stall_seconds` gives its call up (its client took nothing);
- per connection and per worker: a message that would take its connection's, or the
  worker's, unread bytes over their bound first gives up the calls there that have waited
  longest for their clients (at least GRACE_S: a burst of answers to clients that read,
  one change sent to every watch, waits on the server's own writes, not on its clients),
  then waits for them to end; when that cannot make room, its own call is given up at once.

Giving up the newcomer is what keeps the bound when many answers are built in one turn of
the event loop (hundreds of calls read from the sockets at once): a call given up elsewhere
frees its memory only once the loop comes back to it, the newcomer's own at once. So the
unread bytes of calls not given up stay within the bound, and those of calls given up but
not yet ended within as much again.

A call given up while its send waits for its client ends at once: the send raises
ClientStalled. A message refused for want of room is not sent: the send notes why on its
caller and returns, and ClientGone ends the call at its next write, so that what the call
built is freed as its frames return rather than held by an exception on its way out. Either
way the server then resets the HTTP/2 stream or closes the HTTP/1.1 connection
(server/hypercorn_fix.py), and a watch so ended resumes from the last cursor its client read.
Most sends return at once, so one sweeper per worker, running while sends are pending, finds
those that waited the stall bound, rather than a timer armed for each.
"""

from __future__ import annotations

import asyncio
from collections.abc import Hashable
from typing import Final, Protocol

from zkplatform.asgi import Message, Send
from zkplatform.rpc.front.sweeper import Sweeper

CHUNK_BYTES: Final = 64 * 1024  # an HTTP/2 stream's default window: what a client that reads takes at once
GRACE_S: Final = 1.0
_MIB = 1024 * 1024


class ClientStalled(BaseException):  # not an error of the call: it unwinds the call
    """The call was given up: its client did not take its answer (the message says how).
    A BaseException, as CancelledError is, so that no error handling on the way
    (connectrpc's, the error mapping's `internal`) takes it for a failure to report: it
    only ends the call."""


class Caller(Protocol):
    """The call a message is sent for: its connection (what tells it from the worker's others;
    None: unknown), and why it was given up ("" until then), which Unread writes."""

    connection: Hashable | None
    given_up: str


class _Send:
    """A send in progress: its message's part not yet taken, and since when it waits for its client."""

    __slots__ = ("began", "bounds", "connection", "given_up", "sending", "since", "task", "unread")

    def __init__(self, task: asyncio.Task[object], connection: Hashable | None, unread: int, now: float) -> None:
        self.task = task
        self.connection = connection
        self.unread = unread
        self.bounds: tuple[_Bound, ...] = ()  # those it counts against: none when it holds no bytes
        self.began = self.since = now  # since: the send's start, or when its client last took a chunk
        self.sending = False  # admitted: waiting for its client, not for room
        self.given_up = ""  # why, once given up


class _Bound:
    """The sends under one bound (the worker's, or a connection's), oldest first."""

    __slots__ = ("at_most", "given_up", "name", "sends", "unread")

    def __init__(self, at_most: int, name: str) -> None:
        self.at_most = at_most
        self.name = name
        self.sends: dict[_Send, None] = {}
        self.unread = 0  # of all its sends, given up or not
        self.given_up = 0  # of those given up but not yet ended


class Unread:
    """The sends of one worker waiting for their clients, and the bounds on them."""

    def __init__(self, stall_seconds: float, per_connection: int, per_worker: int) -> None:
        self.stall_seconds = stall_seconds
        self.per_connection = per_connection
        self._sends: dict[asyncio.Task[object], _Send] = {}
        self._worker = _Bound(per_worker, "the server")
        self._connections: dict[Hashable, _Bound] = {}
        self._ended = asyncio.Event()  # a send given up has ended: room may have come
        self._sweeper = Sweeper(min(1.0, self.stall_seconds / 4), self._give_up_stalled)

    async def send(self, send: Send, message: Message, caller: Caller) -> None:
        """Send the message in chunks; when there is no room for it, its call is given up (the
        caller's `given_up` says why) and nothing is sent; ClientStalled once the call is given up
        while it waits."""
        loop = asyncio.get_running_loop()
        task: asyncio.Task[object] = asyncio.current_task(loop)  # type: ignore[assignment] # always in a task
        body = message.get("body", b"") if message["type"] == "http.response.body" else b""
        this = _Send(task, caller.connection, len(body), loop.time())
        self._sends[task] = this
        over = False  # a bound is exceeded: room must be made, or found lacking
        if this.unread:
            bounds = this.bounds = self._bounds_of(this)
            for bound in bounds:
                bound.sends[this] = None
                bound.unread += this.unread
                over = over or bound.unread > bound.at_most
        self._sweeper.start()
        try:
            if over and (no_room := await self._admit(this, this.bounds)):
                caller.given_up = no_room
                return
            this.sending = True
            if len(body) <= CHUNK_BYTES:
                await send(message)
                return
            more = message.get("more_body", False)
            for start in range(0, len(body), CHUNK_BYTES):
                chunk = body[start : start + CHUNK_BYTES]
                last = start + CHUNK_BYTES >= len(body)
                await send({**message, "body": chunk, "more_body": more if last else True})
                this.since = loop.time()
                if not this.given_up:
                    this.unread -= len(chunk)
                    for bound in this.bounds:
                        bound.unread -= len(chunk)
        except asyncio.CancelledError:
            if not this.given_up:
                raise
            task.uncancel()
            caller.given_up = this.given_up
            raise ClientStalled(this.given_up) from None
        finally:
            self._forget(this)

    def _bounds_of(self, this: _Send) -> tuple[_Bound, ...]:
        if this.connection is None:
            return (self._worker,)
        bound = self._connections.get(this.connection)
        if bound is None:
            bound = self._connections[this.connection] = _Bound(self.per_connection, "its connection")
        return (self._worker, bound)

    async def _admit(self, this: _Send, bounds: tuple[_Bound, ...]) -> str:
        """ "" once the message fits its bounds, giving up the calls that waited longest for
        their clients; why not when that cannot make room."""
        while True:
            waits = False
            for bound in bounds:
                others = bound.unread - this.unread
                if others == 0 or bound.unread <= bound.at_most:
                    continue
                live = others - bound.given_up
                live -= self._give_up_longest_waiting(bound, live + this.unread - bound.at_most)
                if live > 0 and live + this.unread > bound.at_most:
                    held = f"{bound.unread / _MIB:.1f} MiB"
                    return f"{bound.name} held {held} of answers unread (at most {bound.at_most / _MIB:g} MiB)"
                waits = True  # for the calls given up to end
            if not waits:
                return ""
            self._ended.clear()
            await self._ended.wait()

    def _give_up_longest_waiting(self, bound: _Bound, excess: int) -> int:
        """Give up sends of the bound that have waited at least GRACE_S for their clients, longest
        first, until their unread bytes make up `excess`: how many bytes were given up."""
        now = asyncio.get_running_loop().time()
        oldest = next(iter(bound.sends))
        if excess <= 0 or oldest.began > now - GRACE_S:  # none can have waited that long
            return 0
        waited = (s for s in bound.sends if s.sending and not s.given_up and s.unread and s.since <= now - GRACE_S)
        freed = 0
        for stalled in sorted(waited, key=lambda s: s.since):
            if freed >= excess:
                break
            freed += stalled.unread
            self._give_up(stalled, f"{bound.name} held more than {bound.at_most / _MIB:g} MiB of answers unread")
        return freed

    def _give_up(self, this: _Send, why: str) -> None:
        this.given_up = why
        for bound in this.bounds:
            bound.given_up += this.unread
        this.task.cancel()

    def _forget(self, this: _Send) -> None:
        del self._sends[this.task]
        for bound in this.bounds:
            del bound.sends[this]
            bound.unread -= this.unread
            if this.given_up:
                bound.given_up -= this.unread
        if len(this.bounds) > 1 and not this.bounds[-1].sends:  # the connection's: forgotten once empty
            del self._connections[this.connection]
        if this.given_up:
            self._ended.set()

    def _give_up_stalled(self, now: float) -> bool:
        """Give up the sends that waited the stall bound; False once none is pending."""
        if not self._sends:
            return False
        oldest = now - self.stall_seconds
        for waiting in list(self._sends.values()):
            if waiting.since <= oldest and not waiting.given_up:
                self._give_up(waiting, f"the client took nothing of the answer for {self.stall_seconds:g} s")
        return True
