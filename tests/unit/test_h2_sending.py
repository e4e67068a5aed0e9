"""server/h2_sending.py: a connection's streams with data take turns; those without are skipped
at no cost; the errors hypercorn's sender catches are the priority tree's."""

from __future__ import annotations

from typing import Any

import pytest
from hypercorn.asyncio.worker_context import WorkerContext
from hypercorn.config import Config
from hypercorn.events import Event
from hypercorn.protocol.h2 import H2Protocol
from priority.priority import DeadlockError, DuplicateStreamError, MissingStreamError, TooManyStreamsError

from zkplatform.server import hypercorn_fix
from zkplatform.server.h2_sending import MAXIMUM_STREAMS, RoundRobin


def turns(streams: RoundRobin, count: int) -> list[int]:
    return [next(streams) for _ in range(count)]


def test_the_streams_with_data_take_turns_in_the_order_they_got_it() -> None:
    streams = RoundRobin()
    for stream_id in (1, 3, 5, 7):
        streams.insert_stream(stream_id)
        streams.block(stream_id)  # as hypercorn does with every new stream
    streams.unblock(5)
    streams.unblock(1)
    streams.unblock(3)

    assert turns(streams, 5) == [5, 1, 3, 5, 1]
    streams.block(3)
    assert turns(streams, 3) == [5, 1, 5]
    streams.remove_stream(5)
    streams.unblock(7)
    assert turns(streams, 3) == [1, 7, 1]


def test_with_nothing_to_send_the_sender_is_told_to_wait() -> None:
    streams = RoundRobin()
    with pytest.raises(DeadlockError):
        next(streams)
    streams.insert_stream(1)
    assert next(streams) == 1  # a new stream is ready until blocked
    streams.block(1)
    with pytest.raises(DeadlockError):
        next(streams)


def test_unknown_and_duplicate_streams_are_refused_as_the_tree_refused_them() -> None:
    streams = RoundRobin()
    streams.insert_stream(1)
    with pytest.raises(DuplicateStreamError):
        streams.insert_stream(1)
    for call in (streams.block, streams.unblock, streams.remove_stream, streams.reprioritize):
        with pytest.raises(MissingStreamError):
            call(9)
    streams.reprioritize(1, depends_on=None, weight=200)  # priorities are ignored
    assert next(streams) == 1


def test_no_more_streams_are_known_than_the_tree_knew() -> None:
    """PRIORITY frames name streams without opening them: without a bound, a client could fill a
    connection's memory with streams that never come."""
    streams = RoundRobin()
    for stream_id in range(1, 2 * MAXIMUM_STREAMS, 2):
        streams.insert_stream(stream_id)
    with pytest.raises(TooManyStreamsError):
        streams.insert_stream(2 * MAXIMUM_STREAMS + 1)
    streams.remove_stream(1)
    streams.insert_stream(2 * MAXIMUM_STREAMS + 1)  # a place freed is taken again


async def test_hypercorn_http2_connections_use_it() -> None:
    hypercorn_fix.apply()

    async def send(event: Event) -> None:
        pass

    unused: Any = None  # only what __init__ keeps
    connection = H2Protocol(unused, Config(), WorkerContext(None), unused, unused, False, None, None, send)

    scheduler: object = connection.priority
    assert isinstance(scheduler, RoundRobin)
