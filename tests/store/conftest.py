"""PostgreSQL stores for the adapter's own tests.

`postgres_url` comes from the tests.pg plugin, which tests/conftest.py registers:
pytest refuses `pytest_plugins` in a conftest below the top level.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import pytest

from tests.store.stores import closing, migrated
from zkplatform.store.postgres import PostgresStore

POOL_SIZE = 10


@pytest.fixture
async def migrated_url(postgres_url: str) -> str:
    """A fresh database at this build's schema."""
    await migrated(postgres_url)
    return postgres_url


@pytest.fixture
async def stores(migrated_url: str) -> AsyncIterator[tuple[PostgresStore, PostgresStore]]:
    """Two stores on one database: two pools, so separate connections, as two processes would have."""
    async with contextlib.AsyncExitStack() as stack:
        first, second = [
            await stack.enter_async_context(closing(PostgresStore.open(migrated_url, max_size=POOL_SIZE)))
            for _ in range(2)
        ]
        for store in (first, second):
            # Every connection up front, so that concurrent calls really overlap.
            await store._pool.resize(POOL_SIZE, POOL_SIZE)
            await store._pool.wait(timeout=10)
        yield first, second
