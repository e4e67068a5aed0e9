"""What only PostgreSQL can get wrong: migrations, schema checks, and races between processes."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import TypeVar

import psycopg
import pytest

from tests.actors import OPERATOR, at
from tests.contract.test_store_contract import item
from tests.store.stores import closing
from zkplatform.domain.models import (
    Principal,
    Role,
    Scope,
    Tenant,
    TokenRecord,
    Tombstone,
    Vault,
)
from zkplatform.domain.ports.items import Stale
from zkplatform.store import open_store
from zkplatform.store.migrations import SchemaError, latest
from zkplatform.store.postgres import PostgresStore

T = TypeVar("T")
NOW = 1_800_000_000
LATEST = latest("postgresql")
Stores = tuple[PostgresStore, PostgresStore]


def a_token(number: int) -> TokenRecord:
    return TokenRecord(
        token_id=f"tok-{number}",
        secret_hash=number.to_bytes(32, "big"),
        tenant_id="t1",
        principal_id="p1",
        scopes=frozenset({Scope.VAULT_ITEMS_READ}),
        issued_at=NOW,
        expires_at=NOW + 600 + number,
        minted=True,
    )


async def seed(store: PostgresStore, *item_ids: str) -> None:
    """Tenant t1, its owner p1, vault v1 of p1 holding the items."""
    await store.add_tenant(Tenant("t1"), OPERATOR)
    await store.add_principal(Principal("p1", "t1", Role.OWNER, Role.OWNER.default_scopes), OPERATOR)
    await store.add_vault(Vault("v1", "t1", frozenset({"p1"})), OPERATOR)
    await store.add_items([item(i) for i in item_ids], OPERATOR)


async def from_both(stores: Stores, count: int, call: Callable[[PostgresStore, int], Awaitable[T]]) -> list[T]:
    """`count` calls at once, alternating between the two stores."""
    return await asyncio.gather(*(call(stores[n % 2], n) for n in range(count)))


async def set_schema_version(url: str, version: int) -> None:
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        await conn.execute("UPDATE schema_version SET version = %s", (version,))


# schema


async def test_migrate_applies_once(postgres_url: str) -> None:
    async with closing(open_store(postgres_url, check_schema=False)) as store:
        assert await store.schema_version() is None
        assert await store.migrate() == list(range(1, LATEST + 1))
        assert await store.migrate() == []
        assert await store.schema_version() == LATEST

    async with closing(open_store(postgres_url)) as opened:
        assert isinstance(opened, PostgresStore)


async def test_concurrent_migrations_apply_once(postgres_url: str) -> None:
    async with contextlib.AsyncExitStack() as stack:
        stores = [
            await stack.enter_async_context(closing(PostgresStore.open(postgres_url, check_schema=False)))
            for _ in range(4)
        ]
        applied = await asyncio.gather(*(s.migrate() for s in stores))

    assert sorted(applied) == [[], [], [], list(range(1, LATEST + 1))]


async def test_open_refuses_an_empty_database(postgres_url: str) -> None:
    with pytest.raises(SchemaError, match=r"not initialised.*`zkplatform admin .*migrate`"):
        await open_store(postgres_url)


async def test_open_refuses_a_newer_schema(migrated_url: str) -> None:
    await set_schema_version(migrated_url, LATEST + 1)

    with pytest.raises(SchemaError, match="newer than this build knows"):
        await open_store(migrated_url)

    async with closing(open_store(migrated_url, check_schema=False)) as store:
        with pytest.raises(SchemaError, match="newer"):
            await store.migrate()  # never downgrades
        assert await store.schema_version() == LATEST + 1


async def test_open_refuses_an_older_schema(migrated_url: str) -> None:
    await set_schema_version(migrated_url, LATEST - 1)

    with pytest.raises(SchemaError, match=r"admin .*migrate"):
        await open_store(migrated_url)


# races between processes


async def test_concurrent_deletes_of_one_item_make_one_tombstone(stores: Stores) -> None:
    await seed(stores[0], "i1", "i2")
    before = await stores[1].vault_sequence("v1")

    outcomes = await from_both(stores, 50, lambda store, n: store.delete_item("v1", "i1", 1, at(NOW + n)))

    first = outcomes[0]
    assert isinstance(first, Tombstone)
    assert all(outcome == first for outcome in outcomes)
    assert first.sequence == before + 1
    assert first.item.version == 2
    assert await stores[0].vault_sequence("v1") == before + 1
    assert await stores[1].get_item("v1", "i1") == first.item


async def test_a_stale_delete_racing_the_right_one_changes_nothing(stores: Stores) -> None:
    await seed(stores[0], "i1")
    before = await stores[0].vault_sequence("v1")

    outcomes = await from_both(stores, 40, lambda store, n: store.delete_item("v1", "i1", 1 + n % 4 // 2, at(NOW)))

    tombstones = {o for o in outcomes if isinstance(o, Tombstone)}
    assert len(tombstones) == 1
    assert all(isinstance(o, Tombstone) or o == Stale(1) for o in outcomes)
    assert await stores[1].vault_sequence("v1") == before + 1


async def test_concurrent_changes_to_one_vault_take_distinct_sequence_numbers(stores: Stores) -> None:
    item_ids = [f"i{n}" for n in range(20)]
    await seed(stores[0], *item_ids)
    before = await stores[0].vault_sequence("v1")

    outcomes = await from_both(stores, 20, lambda store, n: store.delete_item("v1", item_ids[n], 1, at(NOW)))
    added = await from_both(
        stores, 10, lambda store, n: store.add_items([item(f"new{n}a"), item(f"new{n}b")], OPERATOR)
    )

    sequences = sorted(o.sequence for o in outcomes if isinstance(o, Tombstone))
    assert sequences == list(range(before + 1, before + 21))
    assert added == [None] * 10
    assert await stores[1].vault_sequence("v1") == before + 40


async def test_concurrent_mints_never_exceed_the_cap(stores: Stores) -> None:
    await seed(stores[0])

    answers = await from_both(stores, 20, lambda store, n: store.add_minted_token(a_token(n), 5, at(NOW)))

    admitted = [n for n, answer in enumerate(answers) if answer is None]
    assert len(admitted) == 5
    first_expiry = min(a_token(n).expires_at for n in admitted)
    assert all(answer in (None, first_expiry) for answer in answers)
    for n in range(20):
        assert (await stores[n % 2].find_token(a_token(n).secret_hash) is not None) == (n in admitted)


async def test_concurrent_mint_attempts_never_exceed_the_rate(stores: Stores) -> None:
    await seed(stores[0])

    answers = await from_both(stores, 50, lambda store, n: store.record_mint_attempt("p1", NOW, 60, 5))

    assert answers.count(None) == 5
    assert all(answer is None or answer == 60 for answer in answers)


async def test_a_proof_replayed_concurrently_is_accepted_once(stores: Stores) -> None:
    await stores[0].remember_proof("key", "old", NOW - 100, NOW - 1)

    answers = await from_both(stores, 20, lambda store, n: store.remember_proof("key", "jti", NOW, NOW + 60))

    assert answers.count(True) == 1
    assert await stores[1].remember_proof("key", "old", NOW, NOW + 60)  # lapsed, so forgotten
