"""The epoch as two PostgreSQL workers see it when one rotates it (an operator's command while
the servers run, which the restore procedure avoids): pages, and the checks of cursors
against them, read it in their own snapshot, at once; the epoch a worker answers a change's
cursor with follows within a second."""

from __future__ import annotations

import asyncio

from tests.actors import OPERATOR
from zkplatform.store.postgres import PostgresStore
from zkplatform.store.postgres.items import _EPOCH_TTL_SECONDS

Stores = tuple[PostgresStore, PostgresStore]


async def test_pages_see_a_rotation_at_once_and_the_answers_epoch_within_a_second(stores: Stores) -> None:
    first, second = stores
    before = await second.epoch()  # read, and kept for a while

    after = await first.rotate_epoch(OPERATOR)

    assert await first.epoch() == after  # the worker that rotated it, at once
    assert await second.epoch() == before  # kept
    assert (await second.list_changes("no-such-vault", 0, 1)).epoch == after  # in the page's own snapshot
    assert await second.epoch() == after  # and kept from there

    again = await first.rotate_epoch(OPERATOR)
    await asyncio.sleep(_EPOCH_TTL_SECONDS + 0.1)
    assert await second.epoch() == again
