"""The order in which hypercorn's HTTP/2 sender serves a connection's streams: round robin.

hypercorn 0.18 asks a `priority.PriorityTree` (RFC 7540's stream priorities) for the next stream
with data to send. Each ask pops streams off a heap until it meets one with data, comparing them
in Python, and pushes them all back: its cost grows with the connection's streams that have
nothing to send. Many watches on one connection are exactly that, each sending now and then,
so on every message and heartbeat the sender walked all of them (bench/analysis.md, issue 42,
has the profile). RFC 9113 deprecated those priorities, and a server may ignore them; Connect
and gRPC clients send none. `RoundRobin` keeps the streams with data in the order they got it,
and gives each its turn: an ask costs the same however many streams wait.
"""

from __future__ import annotations

from priority.priority import DeadlockError, DuplicateStreamError, MissingStreamError, TooManyStreamsError

# The tree's bound on the streams it knows (a PRIORITY frame names a stream without opening it): a
# client cannot grow the set without end by naming streams it never opens.
MAXIMUM_STREAMS = 1000


class RoundRobin:
    """What hypercorn's H2Protocol asks of its PriorityTree, with the same errors."""

    def __init__(self) -> None:
        self._streams: set[int] = set()
        self._ready: dict[int, None] = {}  # the streams with data to send, next first

    def insert_stream(
        self, stream_id: int, depends_on: int | None = None, weight: int = 16, *, exclusive: bool = False
    ) -> None:
        """A new stream, ready to send (as the tree's are): hypercorn blocks it at once."""
        if stream_id in self._streams:
            raise DuplicateStreamError(stream_id)
        if len(self._streams) >= MAXIMUM_STREAMS:
            raise TooManyStreamsError(stream_id)
        self._streams.add(stream_id)
        self._ready[stream_id] = None

    def reprioritize(
        self, stream_id: int, depends_on: int | None = None, weight: int = 16, *, exclusive: bool = False
    ) -> None:
        self._known(stream_id)

    def remove_stream(self, stream_id: int) -> None:
        self._known(stream_id)
        self._streams.discard(stream_id)
        self._ready.pop(stream_id, None)

    def block(self, stream_id: int) -> None:
        self._known(stream_id)
        self._ready.pop(stream_id, None)

    def unblock(self, stream_id: int) -> None:
        self._known(stream_id)
        self._ready.setdefault(stream_id, None)

    def __iter__(self) -> RoundRobin:
        return self

    def __next__(self) -> int:
        """The stream whose turn it is, which then waits behind the others with data."""
        for stream_id in self._ready:
            del self._ready[stream_id]
            self._ready[stream_id] = None
            return stream_id
        raise DeadlockError

    def _known(self, stream_id: int) -> None:
        if stream_id not in self._streams:
            raise MissingStreamError(stream_id)
