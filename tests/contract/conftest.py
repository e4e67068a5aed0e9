from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.store.stores import closing, migrated
from zkplatform.store import MigratableStore, open_store

STORES = ["memory", "sqlite", "postgresql"]


@pytest.fixture(params=STORES)
async def store(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[MigratableStore]:
    """A fresh, migrated store of each kind: the suite must pass on all of them alike."""
    match request.param:
        case "memory":
            url = "memory:"
        case "sqlite":
            url = f"sqlite:///{tmp_path_factory.mktemp('sqlite')}/store.db"
        case _:
            url = request.getfixturevalue("postgres_url")
    await migrated(url)
    async with closing(open_store(url)) as opened:
        yield opened
