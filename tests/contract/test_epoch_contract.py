"""The store's epoch, every store alike: made with the store, the same on every read and after
reopening, read in the snapshot of every page; rotate_epoch replaces it and records it in every
tenant's audit trail. Then the story epochs exist for: a store restored from a backup (SQLite:
its file copied back; PostgreSQL: its database made again from a copy), its epoch rotated, and a
client that resumes with its old cursor and epoch told to start over."""

from __future__ import annotations

import contextlib
import re
import shutil
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import psycopg
import pytest
from psycopg import sql

from tests.actors import OPERATOR
from tests.contract.test_audit_contract import brief, trail
from tests.store.stores import closing, migrated
from tests.unit.test_vault_items import NO_PROOF, content
from tests.world import PEPPER, FakeClock, World
from zkplatform.devmode import DevTenant
from zkplatform.domain.auth import Caller, Presented
from zkplatform.domain.errors import CursorExpired
from zkplatform.domain.models import Tenant, Vault
from zkplatform.store import MigratableStore, open_store, sqlite_path
from zkplatform.wiring import Platform

VAULT = "acme-shared"
SEEDED = 6  # the development vault's items: sequences 1..6
HEX_EPOCH = re.compile("[0-9a-f]{32}")


async def test_a_store_has_an_epoch_from_its_creation_on_every_page(store: MigratableStore) -> None:
    epoch = await store.epoch()
    await store.add_tenant(Tenant("t1"), OPERATOR)
    await store.add_vault(Vault("v1", "t1", frozenset()), OPERATOR)

    assert HEX_EPOCH.fullmatch(epoch)
    assert await store.epoch() == epoch
    assert (await store.list_items("v1", "", 10, show_deleted=True)).epoch == epoch
    assert (await store.list_changes("v1", 0, 10)).epoch == epoch
    assert (await store.list_changes("no-such-vault", 0, 10)).epoch == epoch


async def test_rotating_replaces_the_epoch_and_tells_every_tenants_trail(store: MigratableStore) -> None:
    for tenant_id in ("t1", "t2"):
        await store.add_tenant(Tenant(tenant_id), OPERATOR)
    await store.add_vault(Vault("v1", "t1", frozenset()), OPERATOR)
    before = await store.epoch()

    after = await store.rotate_epoch(OPERATOR)

    assert HEX_EPOCH.fullmatch(after)
    assert after != before
    assert await store.epoch() == after
    assert (await store.list_items("v1", "", 10, show_deleted=True)).epoch == after
    assert (await store.list_changes("v1", 0, 10)).epoch == after
    for tenant_id in ("t1", "t2"):
        assert brief(await trail(store, tenant_id))[-1] == ("store.epoch_rotated", {"epoch": after})
    assert await store.rotate_epoch(OPERATOR) not in (before, after)


# A store's history, kept and restored: the tests below open the store themselves.


@pytest.fixture(params=["memory", "sqlite", "postgresql"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "memory":
        return "memory:"
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/store.db"
    return str(request.getfixturevalue("postgres_url"))


async def test_the_epoch_is_the_stores_own_and_outlives_a_reopening(url: str, tmp_path: Path) -> None:
    if url == "memory:":
        pytest.skip("a memory store is gone once closed: its history, and its epoch, with it")
    await migrated(url)
    async with closing(open_store(url)) as store:
        epoch = await store.epoch()
    async with closing(open_store(url)) as store:
        assert await store.epoch() == epoch
    other = f"sqlite:///{tmp_path}/other.db"  # a fresh store, such as an import's
    await migrated(other)
    async with closing(open_store(other)) as store:
        assert await store.epoch() != epoch


class Backup:
    """A copy of a closed store, to restore it from: the SQLite files, or a PostgreSQL database
    made from the store's as a template (which takes no connection to it)."""

    def __init__(self, url: str, postgres_server: str | None) -> None:
        self._url = url
        self._server = postgres_server
        self._copy = ""

    def take(self) -> None:
        if self._server is None:
            path = sqlite_path(self._url)
            assert path is not None
            self._copy = str(path.with_suffix(".backup"))
            shutil.copyfile(path, self._copy)  # closed: its WAL is checkpointed into it and gone
            assert not Path(f"{path}-wal").exists()
        else:
            self._copy = f"{self._database()}_backup"
            self._admin("CREATE DATABASE {} TEMPLATE {}", self._copy, self._database())

    def restore(self) -> None:
        """The store as the copy has it, whatever happened to it since (it is closed)."""
        if self._server is None:
            path = sqlite_path(self._url)
            assert path is not None
            shutil.copyfile(self._copy, path)
        else:
            self._admin("DROP DATABASE {} WITH (FORCE)", self._database())
            self._admin("CREATE DATABASE {} TEMPLATE {}", self._database(), self._copy)

    def drop(self) -> None:
        if self._server is not None and self._copy:
            self._admin("DROP DATABASE IF EXISTS {} WITH (FORCE)", self._copy)

    def _database(self) -> str:
        return urlsplit(self._url).path.lstrip("/")

    def _admin(self, statement: str, *names: str) -> None:
        assert self._server is not None
        with psycopg.connect(self._server, autocommit=True) as admin:
            admin.execute(sql.SQL(statement).format(*map(sql.Identifier, names)))


@pytest.fixture
def backup(url: str, request: pytest.FixtureRequest) -> Iterator[Backup]:
    if url == "memory:":
        pytest.skip("a memory store is one process's own: nothing to back up or restore")
    server = request.getfixturevalue("postgres_server") if url.startswith("postgresql") else None
    kept = Backup(url, server)
    try:
        yield kept
    finally:
        kept.drop()


@dataclass
class Run:
    """One opening of the store, as one run of the servers: the platform on it, and bob, a member."""

    store: MigratableStore
    platform: Platform
    bob: Caller


class Runs:
    """Openings of the store one after the other: the first seeds the development data set, the
    later ones use its tokens."""

    def __init__(self, url: str) -> None:
        self._url = url
        self._tenants: list[DevTenant] | None = None

    @contextlib.asynccontextmanager
    async def run(self) -> AsyncIterator[Run]:
        async with closing(open_store(self._url)) as store:
            platform = Platform.build(store, PEPPER, FakeClock())
            if self._tenants is None:
                self._tenants = (await World.seed(platform)).tenants
            token = World(platform, self._tenants).token("bob")
            bob = await platform.authenticator.authenticate(Presented(token, dpop_scheme=False), NO_PROOF)
            yield Run(store, platform, bob)


@pytest.fixture
def runs(url: str) -> Runs:
    return Runs(url)


async def test_after_a_restore_and_a_rotation_an_old_cursor_starts_over(url: str, backup: Backup, runs: Runs) -> None:
    await migrated(url)
    async with runs.run() as run:  # the servers run; bob's client syncs
        synced = await run.platform.sync.list_changes(run.bob, VAULT, 0, 0)
        assert (synced.cursor, synced.has_more) == (SEEDED, False)
    backup.take()  # the nightly backup, at sequence 6
    async with runs.run() as run:  # the servers run on; bob's client sees two more changes
        await run.platform.vault.create_item(run.bob, VAULT, "lost-1", content("l"))
        await run.platform.vault.create_item(run.bob, VAULT, "lost-2", content("l"))
        synced = await run.platform.sync.list_changes(run.bob, VAULT, synced.cursor, 0, synced.epoch)
        assert synced.cursor == SEEDED + 2
    backup.restore()  # the database is lost and restored: lost-1 and lost-2 are gone
    async with runs.run() as run:
        assert await run.store.epoch() == synced.epoch  # restored with everything else
        await run.store.rotate_epoch(OPERATOR)  # the restore's step (`zkplatform admin epoch rotate`)
        for n in (1, 2, 3):  # new changes take 7, 8 and 9 again: other changes than bob's 7 and 8
            await run.platform.vault.create_item(run.bob, VAULT, f"new-{n}", content("n"))

        with pytest.raises(CursorExpired) as expired:
            await run.platform.sync.list_changes(run.bob, VAULT, synced.cursor, 0, synced.epoch)
        assert expired.value.epoch == await run.store.epoch()
        with pytest.raises(CursorExpired):
            await anext(run.platform.sync.watch_changes(run.bob, VAULT, synced.cursor, synced.epoch))
        # Without its epoch, the cursor is taken for one of this history's: new-1 and new-2 are
        # skipped, the silent loss epochs exist to prevent (a client that sends none keeps it).
        blind = await run.platform.sync.list_changes(run.bob, VAULT, synced.cursor, 0)
        assert [c.item.item_id for c in blind.changes] == ["new-3"]
        # Starting over: every item of the restored store, and its epoch.
        listed = await run.platform.vault.list_items(run.bob, VAULT, 0, "", False)
        assert [i.item_id for i in listed.items] == [*(f"item-{n}" for n in range(1, 7)), "new-1", "new-2", "new-3"]
        assert (listed.sequence, listed.epoch) == (SEEDED + 3, expired.value.epoch)


async def test_a_restored_store_keeps_the_epoch_of_its_backup_until_rotated(
    url: str, backup: Backup, runs: Runs
) -> None:
    """Why the rotation is a step of the restore: a backup holds the epoch it was taken in."""
    await migrated(url)
    async with runs.run() as run:
        epoch = await run.store.epoch()
    backup.take()
    async with runs.run() as run:
        await run.store.rotate_epoch(OPERATOR)
    backup.restore()
    async with runs.run() as run:
        assert await run.store.epoch() == epoch
