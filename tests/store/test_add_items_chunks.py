"""The SQL stores write an add_items chunk by chunk while its source is still being read:
an import of any length holds one chunk in memory, not the whole input."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg

from tests.actors import OPERATOR
from tests.contract.test_store_contract import item
from tests.store.stores import closing
from zkplatform.domain.models import Item, Principal, Role, Tenant, Vault
from zkplatform.store import MigratableStore, open_store
from zkplatform.store.rows import ADD_ITEMS_CHUNK
from zkplatform.store.sqlite import SQLiteStore


async def seed(store: MigratableStore) -> None:
    await store.add_tenant(Tenant("t1"), OPERATOR)
    await store.add_principal(Principal("p1", "t1", Role.OWNER, Role.OWNER.default_scopes), OPERATOR)
    await store.add_vault(Vault("v1", "t1", frozenset({"p1"})), OPERATOR)


def watched(count: int, look: Callable[[int], None]) -> Iterator[Item]:
    """`count` items for v1; before making each, look at the store with the number made so far."""
    for n in range(count):
        look(n)
        yield item(f"w{n}")


async def test_sqlite_writes_each_chunk_before_reading_the_next(tmp_path: Path) -> None:
    async with closing(open_store(f"sqlite:///{tmp_path}/zk.db", check_schema=False)) as store:
        await store.migrate()
        await seed(store)
        assert isinstance(store, SQLiteStore)
        written: dict[int, int] = {}

        def look(made: int) -> None:
            if made % ADD_ITEMS_CHUNK == 0:
                # The generator runs on the writer's thread, inside the transaction: it sees what is written so far.
                conn = store._engine._write_conn
                assert conn is not None
                written[made] = conn.execute("SELECT count(*) FROM items").fetchone()[0]

        await store.add_items(watched(3 * ADD_ITEMS_CHUNK, look), OPERATOR)

        assert written == {0: 0, ADD_ITEMS_CHUNK: ADD_ITEMS_CHUNK, 2 * ADD_ITEMS_CHUNK: 2 * ADD_ITEMS_CHUNK}
        assert await store.vault_sequence("v1") == 3 * ADD_ITEMS_CHUNK


def vault_is_locked(url: str) -> bool:
    """Whether another transaction holds v1's row: add_items does from its first sequence number on."""
    with psycopg.connect(url) as conn:
        try:
            conn.execute("SELECT 1 FROM vaults WHERE vault_id = 'v1' FOR UPDATE NOWAIT")
        except psycopg.errors.LockNotAvailable:
            return True
        return False


async def test_postgresql_writes_the_first_chunk_before_reading_the_next(migrated_url: str) -> None:
    async with closing(open_store(migrated_url)) as store:
        await seed(store)
        locked: dict[int, bool] = {}

        def look(made: int) -> None:
            if made in (0, ADD_ITEMS_CHUNK):
                locked[made] = vault_is_locked(migrated_url)

        await store.add_items(watched(ADD_ITEMS_CHUNK + 1, look), OPERATOR)

        assert locked == {0: False, ADD_ITEMS_CHUNK: True}
        assert await store.vault_sequence("v1") == ADD_ITEMS_CHUNK + 1
