"""`epoch rotate`, and the restore it is a step of: a SQLite store's file copied back from a
backup, its epoch rotated, and a client's cursor of before the restore refused as expired; an
import into a fresh store, which has an epoch of its own."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
from pathlib import Path

import pytest

from tests.admin.conftest import admin, item, ndjson, tombstone
from tests.store.stores import closing
from tests.unit.test_vault_items import NO_PROOF
from tests.world import PEPPER, FakeClock
from zkplatform.domain.auth import Caller, Presented
from zkplatform.domain.errors import CursorExpired
from zkplatform.domain.models import Principal
from zkplatform.store import open_store
from zkplatform.wiring import Platform


async def epoch_of(url: str) -> str:
    async with closing(open_store(url)) as store:
        return await store.epoch()


def test_rotate_gives_the_store_a_new_epoch_and_says_so(bootstrapped: str, capsys: pytest.CaptureFixture[str]) -> None:
    before = asyncio.run(epoch_of(bootstrapped))

    assert admin(bootstrapped, "epoch", "rotate") == 0

    after = asyncio.run(epoch_of(bootstrapped))
    out, err = capsys.readouterr()
    assert out == (
        f"the store's epoch is now {after} (it was {before}): clients resuming from a cursor"
        " of the old epoch will list their vaults again\n"
    )
    assert err == ""
    assert re.fullmatch("[0-9a-f]{32}", after)
    assert after != before


def test_the_rotation_is_in_every_tenants_audit_trail(bootstrapped: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert admin(bootstrapped, "tenant", "add", "globex") == 0
    assert admin(bootstrapped, "epoch", "rotate") == 0
    epoch = asyncio.run(epoch_of(bootstrapped))
    capsys.readouterr()

    assert admin(bootstrapped, "audit", "export") == 0
    assert admin(bootstrapped, "audit", "verify") == 0

    events = [json.loads(line) for line in capsys.readouterr().out.splitlines()[:-1]]
    rotations = [(e["tenant"], e["actor"], e["target"]) for e in events if e["action"] == "store.epoch_rotated"]
    assert rotations == [(t, {"kind": "operator"}, {"epoch": epoch}) for t in ("acme", "globex")]


def test_rotate_on_a_store_without_a_schema_is_refused(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert admin(url, "epoch", "rotate") == 2
    assert "not initialised" in capsys.readouterr().err


async def client_cursor(url: str, clock: FakeClock, *, at_least: int = 0) -> tuple[int, str]:
    """Where alice's client stands after syncing the vault: its last cursor and the epoch."""
    async with closing(open_store(url)) as store:
        platform = Platform.build(store, PEPPER, clock)
        listed = await platform.sync.list_changes(await alice(platform), "v1", 0, 0)
        assert listed.cursor >= at_least
        return listed.cursor, listed.epoch


async def alice(platform: Platform) -> Caller:
    principal = await platform.store.get_principal("alice")
    assert isinstance(principal, Principal)
    issued = await platform.issuer.issue(principal, 600)
    return await platform.authenticator.authenticate(Presented(issued.secret, dpop_scheme=False), NO_PROOF)


def test_a_restore_from_a_copied_file_then_a_rotation_makes_old_cursors_start_over(
    bootstrapped: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    database = Path(bootstrapped.removeprefix("sqlite:///"))
    clock = FakeClock()
    assert admin(bootstrapped, "import", ndjson(tmp_path / "a.ndjson", item("i1"), item("i2"))) == 0
    shutil.copyfile(database, tmp_path / "backup.db")  # the backup: no command holds the store open
    assert admin(bootstrapped, "import", ndjson(tmp_path / "b.ndjson", item("i3"), item("i4"))) == 0
    cursor, epoch = asyncio.run(client_cursor(bootstrapped, clock, at_least=4))

    shutil.copyfile(tmp_path / "backup.db", database)  # the restore: i3 and i4 are gone
    assert asyncio.run(epoch_of(bootstrapped)) == epoch  # a backup holds the epoch it was taken in
    assert admin(bootstrapped, "epoch", "rotate") == 0
    assert (
        admin(
            bootstrapped, "import", ndjson(tmp_path / "c.ndjson", item("i5"), tombstone("i3", "2026-02-01T00:00:00Z"))
        )
        == 0
    )

    async def resume() -> CursorExpired:
        async with closing(open_store(bootstrapped)) as store:
            platform = Platform.build(store, PEPPER, clock)
            with pytest.raises(CursorExpired) as expired:
                await platform.sync.list_changes(await alice(platform), "v1", cursor, 0, epoch)
            return expired.value

    expired = asyncio.run(resume())
    assert expired.epoch == asyncio.run(epoch_of(bootstrapped)) != epoch


def test_an_import_into_a_fresh_store_has_an_epoch_of_its_own(
    bootstrapped: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Moving items to another store (export, then import) makes another history: its sequence
    numbers are the new store's, and so is its epoch; an import into a store keeps its epoch
    (the items come as new changes, after every cursor)."""
    fresh = f"sqlite:///{tmp_path}/fresh.db"
    for step in (("migrate",), ("tenant", "add", "acme"), ("vault", "add", "v1", "--tenant", "acme")):
        assert admin(fresh, *step) == 0
    before = asyncio.run(epoch_of(fresh))

    assert admin(fresh, "import", ndjson(tmp_path / "items.ndjson", item("i1"), item("i2"))) == 0

    assert asyncio.run(epoch_of(fresh)) == before != asyncio.run(epoch_of(bootstrapped))
