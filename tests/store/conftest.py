"""PostgreSQL stores for the adapter's own tests.

`postgres_url` comes from the tests.pg plugin, which tests/conftest.py registers:
pytest refuses `pytest_plugins` in a conftest below the top level.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from zkplatform.store.postgres import PostgresStore

POOL_SIZE = 10


@pytest.fixture
async def migrated_url(postgres_url: str) -> str:
    """A fresh database at this build's schema."""
    store = await PostgresStore.open(postgres_url, check_schema=False)
    try:
        await store.migrate()
    finally:
        await store.close()
    return postgres_url


@pytest.fixture
async def stores(migrated_url: str) -> AsyncIterator[tuple[PostgresStore, PostgresStore]]:
    """Two stores on one database: two pools, so separate connections, as two processes would have."""
    first = await PostgresStore.open(migrated_url, max_size=POOL_SIZE)
    try:
        second = await PostgresStore.open(migrated_url, max_size=POOL_SIZE)
        try:
            for store in (first, second):
                # Every connection up front, so that concurrent calls really overlap.
                await store._pool.resize(POOL_SIZE, POOL_SIZE)
                await store._pool.wait(timeout=10)
            yield first, second
        finally:
            await second.close()
    finally:
        await first.close()
