"""`key list`, `key revoke` and `key log` through `zkplatform admin`, on SQLite and PostgreSQL:
what they print, what they refuse, and what `key log` names once the key log's tables are
tampered with directly in SQL, as someone with access to the database could."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from joserfc import jwk

from tests.actors import OPERATOR
from tests.admin.conftest import admin, error_line
from tests.store.stores import closing
from zkplatform.domain.recipient_keys import RecipientKey, public_key
from zkplatform.repository import KeyChange
from zkplatform.store import open_store

NOW = 1_800_000_000  # 2027-01-15T08:00:00Z


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, url: str) -> str:
    return url if request.param == "sqlite" else str(request.getfixturevalue("postgres_url"))


def new_key(principal_id: str, tenant_id: str = "acme", at: int = NOW, text: str = "") -> RecipientKey:
    public = public_key(text or json.dumps(jwk.OKPKey.generate_key("X25519").as_dict(private=False)))
    return RecipientKey(public.key_id, tenant_id, principal_id, public.jwk, at)


def published(url: str, *keys: RecipientKey) -> None:
    """The keys published, as DirectoryService would (there is no operator command for it)."""

    async def publish() -> None:
        async with closing(open_store(url)) as store:
            for key in keys:
                change = await store.publish_key(key, OPERATOR)
                assert isinstance(change, KeyChange)
                assert change.changed

    asyncio.run(publish())


def directory(url: str, capsys: pytest.CaptureFixture[str]) -> list[RecipientKey]:
    """Two tenants: acme with alice and bob, who publish three keys; beta with carol."""
    for args in (
        ("migrate",),
        ("tenant", "add", "acme"),
        ("tenant", "add", "beta"),
        ("principal", "add", "alice", "--tenant", "acme", "--role", "owner"),
        ("principal", "add", "bob", "--tenant", "acme", "--role", "member"),
        ("principal", "add", "carol", "--tenant", "beta", "--role", "admin"),
    ):
        assert admin(url, *args) == 0, capsys.readouterr().err
    keys = [new_key("alice"), new_key("bob", at=NOW + 1), new_key("alice", at=NOW + 2)]
    published(url, *keys)
    capsys.readouterr()
    return keys


def lines(capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def test_key_list_shows_a_tenants_keys_with_their_state(store_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    alices, bobs, alices_second = directory(store_url, capsys)
    assert admin(store_url, "key", "revoke", alices.key_id) == 0
    capsys.readouterr()

    assert admin(store_url, "key", "list", "--tenant", "acme") == 0
    listed = lines(capsys)
    assert admin(store_url, "key", "list", "--tenant", "acme", "--principal", "bob") == 0
    bobs_only = lines(capsys)

    assert [(k["keyId"], k["principalId"], k["state"]) for k in listed] == [
        (alices.key_id, "alice", "revoked"),
        (alices_second.key_id, "alice", "live"),
        (bobs.key_id, "bob", "live"),
    ]
    assert listed[0]["jwk"] == alices.jwk
    assert listed[0]["createdAt"] == "2027-01-15T08:00:00Z"
    assert "revokedAt" in listed[0]
    assert "revokedAt" not in listed[1]
    assert [k["keyId"] for k in bobs_only] == [bobs.key_id]


def test_key_list_as_a_table(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    _, bobs, _ = directory(url, capsys)

    assert admin(url, "key", "list", "--tenant", "acme", "--principal", "bob", "--table") == 0

    header, row = capsys.readouterr().out.splitlines()
    assert header.split() == ["keyId", "principalId", "tenantId", "createdAt", "revokedAt", "state"]
    assert row.split() == [bobs.key_id, "bob", "acme", "2027-01-15T08:00:01Z", "-", "live"]


def test_a_key_id_that_begins_with_a_dash_is_revoked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """One key id in 64 begins with '-': it is the command's argument, not an option."""
    url = f"sqlite:///{tmp_path}/zk.db"
    directory(url, capsys)
    keys = (new_key("bob", at=NOW + 3) for _ in range(5000))  # bounded: 64 tries on average
    dashed = next(key for key in keys if key.key_id.startswith("-"))
    published(url, dashed)

    assert admin(url, "key", "revoke", dashed.key_id) == 0
    assert capsys.readouterr().out.startswith(f"key {dashed.key_id} of principal bob in tenant acme revoked")


def test_key_revoke_revokes_once_and_is_audited(store_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    _, bobs, _ = directory(store_url, capsys)

    assert admin(store_url, "key", "revoke", bobs.key_id) == 0
    assert capsys.readouterr().out == (
        f"key {bobs.key_id} of principal bob in tenant acme revoked; the tenant's key log is at entry 4\n"
    )
    assert admin(store_url, "key", "revoke", bobs.key_id) == 0
    assert capsys.readouterr().out == (
        f"key {bobs.key_id} of principal bob in tenant acme was already revoked; nothing was changed\n"
    )
    assert admin(store_url, "audit", "export", "--tenant", "acme") == 0
    last = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert (last["action"], last["target"], last["actor"]) == (
        "key.revoked",
        {"key": bobs.key_id, "principal": "bob"},
        {"kind": "operator"},
    )


def test_key_revoke_of_a_key_in_two_tenants_needs_the_tenant(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    alices, *_ = directory(url, capsys)
    published(url, new_key("carol", "beta", text=alices.jwk))

    assert admin(url, "key", "revoke", alices.key_id) == 1
    assert error_line(capsys) == (
        f"zkplatform admin: key {alices.key_id} is published in several tenants (acme, beta):"
        " name one with --tenant; nothing was changed\n"
    )
    assert admin(url, "key", "revoke", alices.key_id, "--tenant", "beta") == 0
    assert "of principal carol in tenant beta revoked" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("key", "revoke", "A" * 43), f"no key {'A' * 43}"),
        (("key", "revoke", "A" * 43, "--tenant", "beta"), f"no key {'A' * 43} in tenant beta"),
        (("key", "list", "--tenant", "nope"), "no tenant nope"),
        (("key", "log", "--tenant", "nope"), "no tenant nope"),
    ],
)
def test_unknown_keys_and_tenants_are_refused(
    url: str, capsys: pytest.CaptureFixture[str], args: tuple[str, ...], says: str
) -> None:
    directory(url, capsys)

    assert admin(url, *args) == 1

    assert error_line(capsys) == f"zkplatform admin: {says}; nothing was changed\n"


@pytest.mark.parametrize("args", [("key", "revoke", "short"), ("key", "list"), ("key", "log", "--since", "-1")])
def test_bad_usage_is_exit_2(url: str, capsys: pytest.CaptureFixture[str], args: tuple[str, ...]) -> None:
    directory(url, capsys)

    assert admin(url, *args) == 2


def test_key_log_verifies_then_prints_the_log(store_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    keys = directory(store_url, capsys)
    assert admin(store_url, "key", "revoke", keys[0].key_id) == 0
    capsys.readouterr()

    assert admin(store_url, "key", "log", "--tenant", "acme") == 0
    out, err = capsys.readouterr()
    entries = [json.loads(line) for line in out.splitlines()]
    assert admin(store_url, "key", "log", "--tenant", "acme", "--since", "2") == 0
    later = lines(capsys)

    assert [(e["index"], e["action"], e["keyId"]) for e in entries] == [
        ("1", "KEY_LOG_ACTION_PUBLISHED", keys[0].key_id),
        ("2", "KEY_LOG_ACTION_PUBLISHED", keys[1].key_id),
        ("3", "KEY_LOG_ACTION_PUBLISHED", keys[2].key_id),
        ("4", "KEY_LOG_ACTION_REVOKED", keys[0].key_id),
    ]
    assert err == f"zkplatform admin: the key log of tenant acme is sound: 4 entries, head hash {entries[-1]['hash']}\n"
    assert later == entries[2:]


def test_an_empty_key_log_is_sound(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    directory(url, capsys)

    assert admin(url, "key", "log", "--tenant", "beta", "--table") == 0

    out, err = capsys.readouterr()
    assert out.split() == ["index", "action", "principalId", "keyId", "time", "hash"]
    assert err == f"zkplatform admin: the key log of tenant beta is sound: 0 entries, head hash {'A' * 43}\n"


@contextlib.contextmanager
def database(url: str) -> Iterator[Any]:
    """A plain connection to the store's database, committed on the way out: for tampering."""
    if url.startswith("sqlite"):
        with contextlib.closing(sqlite3.connect(url.removeprefix("sqlite:///"))) as lite, lite:
            yield lite
    else:
        with psycopg.connect(url, autocommit=True) as pg:
            yield pg


def sql(url: str, statement: str) -> str:
    return statement if url.startswith("sqlite") else statement.replace("?", "%s")


@pytest.mark.parametrize(
    ("tampering", "says"),
    [
        (
            "UPDATE key_log SET entry = ? WHERE log_index = 3",  # alice's second key, now bob's
            "key log entry 3 does not match its hash (edited, or an earlier entry was)",
        ),
        ("DELETE FROM key_log WHERE log_index = 2", "key log entry 2 is missing"),
        ("DELETE FROM key_log WHERE log_index = 3", "key log entry 3 is missing (the log's head is at 3)"),
        ("UPDATE key_log_heads SET size = 2", "key log entry 3 was added after the log's head"),
        ("UPDATE key_log_heads SET hash = ?", "key log entry 3 does not match the log's head"),
        ("UPDATE key_log SET log_index = 0 WHERE log_index = 1", "key log entry 0 is numbered below 1"),
    ],
    ids=["edited", "removed", "removed at the end", "head behind", "head hash", "renumbered"],
)
def test_key_log_names_where_a_tampered_log_stops_matching(
    store_url: str, capsys: pytest.CaptureFixture[str], tampering: str, says: str
) -> None:
    directory(store_url, capsys)
    with database(store_url) as db:
        [entry] = db.execute(sql(store_url, "SELECT entry FROM key_log WHERE log_index = 3")).fetchone()
        edited = bytes(entry).replace(b'"principalId":"alice"', b'"principalId":"bob"')
        assert edited != bytes(entry)
        value = edited if "entry = ?" in tampering else bytes(32)
        db.execute(sql(store_url, tampering), (value,) if "?" in tampering else ())

    assert admin(store_url, "key", "log", "--tenant", "acme") == 1

    out, err = capsys.readouterr()
    assert out == ""  # nothing of a broken log is printed as if it were sound
    assert err.startswith(f"zkplatform admin: tenant acme: {says}"), err
    assert err.count("\n") == 1
