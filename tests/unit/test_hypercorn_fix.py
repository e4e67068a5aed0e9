"""hypercorn's HTTP/2 stream buffer, as patched: a stalled reader holds its writer back."""

from __future__ import annotations

import asyncio

from hypercorn.asyncio.worker_context import EventWrapper
from hypercorn.protocol.h2 import BUFFER_HIGH_WATER, StreamBuffer

from zkplatform.server import hypercorn_fix


async def turns(count: int = 5) -> None:
    """Let the event loop run the other tasks that are ready, a few times over."""
    for _ in range(count):
        await asyncio.sleep(0)


async def test_a_stream_whose_client_grants_no_window_holds_its_writer_back() -> None:
    hypercorn_fix.apply()
    buffer = StreamBuffer(EventWrapper)
    first = asyncio.create_task(buffer.push(b"m" * BUFFER_HIGH_WATER))  # a message that fills the buffer
    await turns()
    assert not first.done()  # waits for the sender

    await buffer.pop(0)  # the sender finds no window for the stream: nothing is taken
    await turns()

    assert not first.done()  # still waiting: nothing left the buffer
    assert len(buffer.buffer) == BUFFER_HIGH_WATER
    await buffer.pop(BUFFER_HIGH_WATER)  # the client reads: the buffer drains
    await asyncio.wait_for(first, 5)
