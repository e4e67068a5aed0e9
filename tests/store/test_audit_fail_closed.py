"""Fail-closed: when a change's audit event cannot be written, the change is not made.

The audit write is made to fail the way a real one would, inside the database: a
trigger that refuses every insert into audit_events, installed by a connection of
the test's own. Then each kind of change must fail whole, and work again once the
trail takes events.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import psycopg
import pytest

from tests.actors import OPERATOR, at
from tests.contract.test_item_changes import replacing
from tests.contract.test_store_contract import NOW, item, token
from tests.store.stores import closing, migrated, sqlite_file
from tests.world import PEPPER, World, serve_in_process
from zkplatform.domain import tokens
from zkplatform.domain.models import Principal, Role, Scope, ScopeChange, ScopeEdit, Tenant, Vault
from zkplatform.store import MigratableStore, open_store
from zkplatform.wiring import Platform

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


def database(kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, Switch, Switch]:
    """The store's URL, and switches that make its audit writes fail and work again, by SQL run
    on its database from outside the store."""
    if kind == "sqlite":
        path = tmp_path / "store.db"

        def switch(statement: str) -> None:
            with sqlite_file(path) as conn:
                conn.execute(statement)

        return f"sqlite:///{path}", lambda _: switch(SQLITE_REFUSE), lambda _: switch(SQLITE_ALLOW)
    url: str = request.getfixturevalue("postgres_url")

    def run(statement: str) -> None:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(statement.encode())

    return url, lambda _: run(POSTGRES_REFUSE), lambda _: run(POSTGRES_ALLOW)


@pytest.fixture(params=["sqlite", "postgresql"])
async def refusing(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[tuple[MigratableStore, Switch]]:
    """A seeded store whose audit writes fail, and a switch that makes them work again."""
    url, refuse, allow = database(request.param, request, tmp_path)
    await migrated(url)
    async with closing(open_store(url)) as store:
        await store.add_tenant(Tenant("t1"), OPERATOR)
        await store.add_principal(Principal("p1", "t1", Role.OWNER, Role.OWNER.default_scopes), OPERATOR)
        await store.add_vault(Vault("v1", "t1", frozenset({"p1"})), OPERATOR)
        await store.add_items([item("i1"), item("i2")], OPERATOR)
        await store.add_token(token("tok_1"), OPERATOR)
        refuse("")
        yield store, allow


DatabaseError = (sqlite3.DatabaseError, psycopg.Error)


async def test_no_change_is_made_without_its_event(refusing: tuple[MigratableStore, Switch]) -> None:
    store, allow = refusing
    before = await store.audit_head("t1")
    changes = [
        store.delete_item("v1", "i1", 1, at(NOW)),
        store.update_item("v1", "i2", 1, replacing("x"), at(NOW)),
        store.create_item(item("i3"), OPERATOR),
        store.add_items([item("i4")], OPERATOR),
        store.purge_tombstones(NOW + 1, OPERATOR),  # nothing to purge: no event, so this one succeeds
        store.add_token(token("tok_2"), OPERATOR),
        store.add_minted_token(token("tok_3"), 10, at(NOW)),
        store.revoke_token_tree("tok_1", OPERATOR),
        store.set_principal_disabled("p1", OPERATOR, disabled=True),
        store.change_principal_scopes("t1", "p1", ScopeChange(ScopeEdit.REMOVE, frozenset(Scope)), OPERATOR),
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
    assert principal.allowed_scopes == Role.OWNER.default_scopes
    assert await store.get_vault("v2") is None
    assert [t.tenant_id for t in await store.list_tenants()] == ["t1"]

    allow("")
    assert await store.delete_item("v1", "i1", 1, at(NOW)) is not None
    head = await store.audit_head("t1")
    assert before is not None
    assert head is not None
    assert head.sequence == before.sequence + 1


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
async def test_a_token_in_a_url_is_revoked_even_when_its_event_cannot_be_written(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # A leaked token left live is worse than a gap in the trail: the revocation stands without
    # its event, an error line names the token's id, and the request is refused as always.
    caplog.set_level(logging.INFO)
    url, refuse, allow = database(kind, request, tmp_path)
    await migrated(url)
    async with closing(open_store(url)) as store:
        platform = Platform.build(store, PEPPER)
        world = await World.seed(platform)
        bob = world.token("bob")
        before = await store.audit_head("acme")
        refuse("")
        try:
            async with await serve_in_process(platform) as client:
                answer = await client.get(f"/healthz?x={bob}")
        finally:
            allow("")
        record = await store.find_token(tokens.TokenHasher(PEPPER)(bob))

        assert answer.status_code == 400, answer.text
        assert answer.json()["code"] == "invalid_argument"
        assert record is not None
        assert record.revoked
        assert await store.audit_head("acme") == before  # no event: the trail says nothing it did not record
        ours = [r for r in caplog.records if r.name.startswith("zkplatform")]  # httpx logs the URL it was given
        errors = [(r.getMessage(), getattr(r, "fields", {})) for r in ours if r.levelno >= logging.ERROR]
        named = {"token_id": record.token_id}
        assert any("without its audit event" in line and fields == named for line, fields in errors), errors
        assert not [r for r in ours if r.exc_info], "no traceback"
        assert not [r for r in ours if bob in r.getMessage()]
