"""Fail-closed: when a change's audit event cannot be written, the change is not made.

The audit write is made to fail the way a real one would, inside the database: a
trigger that refuses every insert into audit_events, installed by a connection of
the test's own. Then each kind of change must fail whole, and work again once the
trail takes events.
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import psycopg
import pytest

from tests.actors import OPERATOR, at
from tests.contract.test_item_changes import content
from tests.contract.test_store_contract import NOW, item, token
from tests.store.stores import closing, migrated, sqlite_file
from zkplatform.domain.models import Principal, Role, Tenant, Vault
from zkplatform.store import MigratableStore, open_store

SQLITE_REFUSE = (
    "CREATE TRIGGER refuse_audit BEFORE INSERT ON audit_events BEGIN SELECT RAISE(ABORT, 'audit refused'); END"
)
SQLITE_ALLOW = "DROP TRIGGER refuse_audit"
POSTGRES_REFUSE = (
    "CREATE FUNCTION refuse_audit() RETURNS trigger LANGUAGE plpgsql AS"
    " $$ BEGIN RAISE EXCEPTION 'audit refused'; END $$;"
    " CREATE TRIGGER refuse_audit BEFORE INSERT ON audit_events FOR EACH ROW EXECUTE FUNCTION refuse_audit()"
)
POSTGRES_ALLOW = "DROP TRIGGER refuse_audit ON audit_events"

Switch = Callable[[str], None]


@pytest.fixture(params=["sqlite", "postgresql"])
async def refusing(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[tuple[MigratableStore, Switch]]:
    """A seeded store, and a switch that runs SQL on its database from outside the store."""
    if request.param == "sqlite":
        path = tmp_path / "store.db"
        url = f"sqlite:///{path}"

        def switch(statement: str) -> None:
            with sqlite_file(path) as conn:
                conn.execute(statement)

        refuse, allow = SQLITE_REFUSE, SQLITE_ALLOW
    else:
        url = request.getfixturevalue("postgres_url")

        def switch(statement: str) -> None:
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute(statement.encode())

        refuse, allow = POSTGRES_REFUSE, POSTGRES_ALLOW
    await migrated(url)
    async with closing(open_store(url)) as store:
        await store.add_tenant(Tenant("t1"), OPERATOR)
        await store.add_principal(Principal("p1", "t1", Role.OWNER, Role.OWNER.default_scopes), OPERATOR)
        await store.add_vault(Vault("v1", "t1", frozenset({"p1"})), OPERATOR)
        await store.add_items([item("i1"), item("i2")], OPERATOR)
        await store.add_token(token("tok_1"), OPERATOR)
        switch(refuse)
        yield store, lambda _: switch(allow)


DatabaseError = (sqlite3.DatabaseError, psycopg.Error)


async def test_no_change_is_made_without_its_event(refusing: tuple[MigratableStore, Switch]) -> None:
    store, allow = refusing
    before = await store.audit_head("t1")
    changes = [
        store.delete_item("v1", "i1", 1, at(NOW)),
        store.update_item("v1", "i2", 1, content("x"), at(NOW)),
        store.create_item(item("i3"), OPERATOR),
        store.add_items([item("i4")], OPERATOR),
        store.purge_tombstones(NOW + 1, OPERATOR),  # nothing to purge: no event, so this one succeeds
        store.add_token(token("tok_2"), OPERATOR),
        store.add_minted_token(token("tok_3"), 10, at(NOW)),
        store.revoke_token_tree("tok_1", OPERATOR),
        store.set_principal_disabled("p1", OPERATOR, disabled=True),
        store.add_vault(Vault("v2", "t1", frozenset()), OPERATOR),
        store.add_tenant(Tenant("t2"), OPERATOR),
    ]
    failed = 0
    for change in changes:
        try:
            await change
        except DatabaseError:
            failed += 1
    assert failed == len(changes) - 1

    assert await store.audit_head("t1") == before
    assert await store.vault_sequence("v1") == 2
    assert [await store.get_item("v1", i) for i in ("i3", "i4")] == [None, None]
    one, two = await store.get_item("v1", "i1"), await store.get_item("v1", "i2")
    assert one is not None
    assert two is not None
    assert (one.version, one.deleted, two.version) == (1, False, 1)
    assert [await store.get_token(t) is None for t in ("tok_2", "tok_3")] == [True, True]
    assert (first := await store.get_token("tok_1")) is not None
    assert not first.revoked
    assert (principal := await store.get_principal("p1")) is not None
    assert not principal.disabled
    assert await store.get_vault("v2") is None
    assert [t.tenant_id for t in await store.list_tenants()] == ["t1"]

    allow("")
    assert await store.delete_item("v1", "i1", 1, at(NOW)) is not None
    head = await store.audit_head("t1")
    assert before is not None
    assert head is not None
    assert head.sequence == before.sequence + 1
