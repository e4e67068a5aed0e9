"""`keys list`, `keys reset` and `keys log` through `zkplatform admin`, on SQLite and PostgreSQL:
what they print, what they refuse, the reset's signature by the log key as the server finds it,
and what `keys log` names once the key log's tables are tampered with directly in SQL, as
someone with access to the database could."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.admin.conftest import admin, error_line
from tests.rpc.devices import TestDevice
from tests.store.stores import closing
from zkplatform.cli import main as cli
from zkplatform.domain.audit import Action, Actor
from zkplatform.domain.key_log import AddDevice, Device, RevokeDevices
from zkplatform.store import open_store
from zkplatform_tlog.merkle import leaf_hash, root_hash
from zkplatform_tlog.note import NoteVerifier
from zkplatform_tlog.statements import (
    DeviceKeys,
    DeviceRevocation,
    Entry,
    EntrySignature,
    PrincipalReset,
    b64url_decode,
    parse_entry,
)

NOW = 1_800_000_000  # 2027-01-15T08:00:00Z


@pytest.fixture(autouse=True)
def no_log_key_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ZKPLATFORM_LOG_KEY_FILES", "ZKPLATFORM_LOG_NAME"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, url: str) -> str:
    return url if request.param == "sqlite" else str(request.getfixturevalue("postgres_url"))


@pytest.fixture
def log_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> NoteVerifier:
    """A log key made with `zkplatform log-key generate`, named in ZKPLATFORM_LOG_KEY_FILES."""
    path = tmp_path / "log.key"
    assert cli(["log-key", "generate", "--name", "log.example.com", "--out", str(path)]) == 0
    monkeypatch.setenv("ZKPLATFORM_LOG_KEY_FILES", str(path))
    return NoteVerifier.from_vkey(capsys.readouterr().out.strip())


def appended(url: str, *changes: tuple[TestDevice, str, str]) -> None:
    """Devices of acme's principals appended to its log, as DirectoryService would append them
    (there is no operator command for it): (device, principal, "publish" or "revoke")."""

    async def append() -> None:
        async with closing(open_store(url)) as store:
            for device, principal_id, what in changes:
                size = await store.key_log_size("acme")
                published = device.keys("acme", principal_id, NOW)
                statement: DeviceKeys | DeviceRevocation = published
                change: AddDevice | RevokeDevices = AddDevice(
                    Device(
                        tenant_id="acme",
                        principal_id=principal_id,
                        device_id=published.device_id,
                        signing_jwk=published.signing_jwk,
                        agreement_key_id=published.agreement_key_id,
                        agreement_jwk=published.agreement_jwk,
                        endorser="",
                        created_at=NOW,
                        log_index=size,
                    )
                )
                action = Action.DEVICE_PUBLISHED
                if what == "revoke":  # by itself
                    statement = DeviceRevocation("acme", principal_id, device.device_id, device.device_id, NOW)
                    change = RevokeDevices(principal_id, (device.device_id,), NOW)
                    action = Action.DEVICE_REVOKED
                signature = EntrySignature(device.device_id, b64url_decode(device.sign(statement), 64))
                entry = Entry(statement, (signature,)).canonical()
                event = (action, {"principal": principal_id, "device": device.device_id})
                assert await store.append_key_log(
                    "acme", size, entry, change=change, event=event, actor=Actor.operator(NOW)
                )

    asyncio.run(append())


def directory(url: str, capsys: pytest.CaptureFixture[str]) -> list[TestDevice]:
    """Two tenants: acme with alice and bob, whose devices make three entries; beta with carol."""
    for args in (
        ("migrate",),
        ("tenant", "add", "acme"),
        ("tenant", "add", "beta"),
        ("principal", "add", "alice", "--tenant", "acme", "--role", "owner"),
        ("principal", "add", "bob", "--tenant", "acme", "--role", "member"),
        ("principal", "add", "carol", "--tenant", "beta", "--role", "admin"),
    ):
        assert admin(url, *args) == 0, capsys.readouterr().err
    alices, bobs = TestDevice(), TestDevice()
    appended(url, (alices, "alice", "publish"), (bobs, "bob", "publish"), (alices, "alice", "revoke"))
    capsys.readouterr()
    return [alices, bobs]


def lines(capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def test_keys_list_shows_a_tenants_devices_with_their_state(store_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    alices, bobs = directory(store_url, capsys)

    assert admin(store_url, "keys", "list", "--tenant", "acme") == 0
    listed = lines(capsys)
    assert admin(store_url, "keys", "list", "--tenant", "acme", "--principal", "bob") == 0
    bobs_only = lines(capsys)

    assert [(d["deviceId"], d["principalId"], d["state"]) for d in listed] == [
        (alices.device_id, "alice", "revoked"),
        (bobs.device_id, "bob", "live"),
    ]
    assert (listed[0]["signingJwk"], listed[0]["agreementJwk"]) == (alices.signing_jwk, alices.agreement_jwk)
    assert (listed[0]["createdAt"], listed[1]["logIndex"]) == ("2027-01-15T08:00:00Z", "1")
    assert "revokedAt" in listed[0]
    assert "revokedAt" not in listed[1]
    assert [d["deviceId"] for d in bobs_only] == [bobs.device_id]


def test_keys_list_as_a_table(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    _, bobs = directory(url, capsys)

    assert admin(url, "keys", "list", "--tenant", "acme", "--principal", "bob", "--table") == 0

    header, row = capsys.readouterr().out.splitlines()
    assert header.split() == [
        "deviceId",
        "principalId",
        "agreementKeyId",
        "endorserDeviceId",
        "logIndex",
        "createdAt",
        "state",
    ]
    assert row.split() == [
        bobs.device_id,
        "bob",
        bobs.keys("acme", "bob", 0).agreement_key_id,
        "-",
        "1",
        *row.split()[5:],
    ]
    assert row.split()[-2:] == ["2027-01-15T08:00:00Z", "live"]


def test_keys_reset_on_sqlite_signs_with_the_key_the_server_made(
    url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, bobs = directory(url, capsys)

    assert admin(url, "keys", "reset", "--tenant", "acme", "bob") == 0

    out, err = capsys.readouterr()
    (printed,) = [json.loads(line) for line in out.splitlines()]
    assert printed["index"] == "3"
    entry = parse_entry(printed["data"])
    assert (entry.statement.tenant_id, entry.statement.principal_id) == ("acme", "bob")
    assert isinstance(entry.statement, PrincipalReset)
    verifier = NoteVerifier.from_vkey((tmp_path / "x.db.log-key.pub").read_text().strip())
    assert verifier.name == "zkplatform.local"
    assert [s.key_id for s in entry.signatures] == [verifier.key_id.hex()]
    assert verifier.verify(entry.statement.canonical().decode(), entry.signatures[0].signature)
    assert (tmp_path / "x.db.log-key").stat().st_mode & 0o777 == 0o600
    assert "principal bob of tenant acme reset" in err
    assert admin(url, "keys", "list", "--tenant", "acme", "--principal", "bob") == 0
    assert [(d["deviceId"], d["state"]) for d in lines(capsys)] == [(bobs.device_id, "revoked")]
    assert admin(url, "audit", "export", "--tenant", "acme") == 0
    last = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert (last["action"], last["target"], last["actor"]) == (
        "principal.reset",
        {"principal": "bob"},
        {"kind": "operator"},
    )


def test_keys_reset_signs_with_the_configured_log_key(
    store_url: str, log_key: NoteVerifier, capsys: pytest.CaptureFixture[str]
) -> None:
    directory(store_url, capsys)

    assert admin(store_url, "keys", "reset", "--tenant", "acme", "alice") == 0

    entry = parse_entry(lines(capsys)[0]["data"])
    assert [s.key_id for s in entry.signatures] == [log_key.key_id.hex()]
    assert log_key.verify(entry.statement.canonical().decode(), entry.signatures[0].signature)


def test_keys_reset_on_postgresql_without_a_log_key_says_how_to_make_one(
    postgres_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    directory(postgres_url, capsys)

    assert admin(postgres_url, "keys", "reset", "--tenant", "acme", "bob") == 2

    assert "zkplatform log-key generate --name NAME --out FILE" in error_line(capsys)


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("keys", "list", "--tenant", "nope"), "no tenant nope"),
        (("keys", "log", "--tenant", "nope"), "no tenant nope"),
        (("keys", "reset", "--tenant", "nope", "bob"), "no tenant nope"),
        (("keys", "reset", "--tenant", "beta", "bob"), "no principal bob"),
        (("keys", "reset", "--tenant", "acme", "zed"), "no principal zed"),
    ],
)
def test_unknown_tenants_and_principals_are_refused(
    url: str, capsys: pytest.CaptureFixture[str], args: tuple[str, ...], says: str
) -> None:
    directory(url, capsys)

    assert admin(url, *args) == 1

    assert error_line(capsys) == f"zkplatform admin: {says}; nothing was changed\n"


@pytest.mark.parametrize(
    "args", [("keys", "list"), ("keys", "reset", "bob"), ("keys", "log", "--since", "-1"), ("key", "list")]
)
def test_bad_usage_is_exit_2(url: str, capsys: pytest.CaptureFixture[str], args: tuple[str, ...]) -> None:
    directory(url, capsys)

    assert admin(url, *args) == 2


def test_keys_log_verifies_then_prints_the_log(store_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    alices, bobs = directory(store_url, capsys)

    assert admin(store_url, "keys", "log", "--tenant", "acme") == 0
    out, err = capsys.readouterr()
    entries = [json.loads(line) for line in out.splitlines()]
    assert admin(store_url, "keys", "log", "--tenant", "acme", "--since", "1") == 0
    later = lines(capsys)

    assert [e["index"] for e in entries] == ["0", "1", "2"]
    statements = [parse_entry(e["data"]).statement for e in entries]
    assert [type(s).__name__ for s in statements] == ["DeviceKeys", "DeviceKeys", "DeviceRevocation"]
    assert [getattr(s, "device_id", None) for s in statements[:2]] == [alices.device_id, bobs.device_id]
    assert getattr(statements[2], "device", None) == alices.device_id
    root = root_hash([leaf_hash(e["data"].encode()) for e in entries])
    assert err == (f"zkplatform admin: the key log of tenant acme is sound: 3 entries, root hash {_b64(root)}\n")
    assert later == entries[1:]


def _b64(data: bytes) -> str:
    """A hash as checkpoints spell it: standard base64."""
    return base64.b64encode(data).decode()


def test_an_empty_key_log_is_sound(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    directory(url, capsys)

    assert admin(url, "keys", "log", "--tenant", "beta", "--table") == 0

    out, err = capsys.readouterr()
    assert out.split() == ["index", "data"]
    assert err == f"zkplatform admin: the key log of tenant beta is sound: 0 entries, root hash {_b64(root_hash([]))}\n"


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
            "UPDATE key_log_entries SET data = ? WHERE idx = 1",  # bob's device, now alice's
            "key log entry 1 does not match its leaf hash",
        ),
        ("UPDATE key_log_entries SET data = ? WHERE idx = 2", "key log entry 2 is not an entry"),
        ("DELETE FROM key_log_entries WHERE idx = 1", "key log entry 1 is missing"),
        ("DELETE FROM key_log_entries WHERE idx = 2", "key log entry 2 is missing"),
    ],
    ids=["edited", "garbled", "removed", "removed at the end"],
)
def test_keys_log_names_where_a_tampered_log_stops_matching(
    store_url: str, capsys: pytest.CaptureFixture[str], tampering: str, says: str
) -> None:
    directory(store_url, capsys)
    with database(store_url) as db:
        [data] = db.execute(sql(store_url, "SELECT data FROM key_log_entries WHERE idx = 1")).fetchone()
        edited = bytes(data).replace(b'"principalId":"bob"', b'"principalId":"alice"')
        assert edited != bytes(data)
        values: tuple[bytes, ...] = ()
        if "data = ?" in tampering:
            values = (b"{ }",) if "idx = 2" in tampering else (edited,)
        db.execute(sql(store_url, tampering), values)

    assert admin(store_url, "keys", "log", "--tenant", "acme") == 1

    out, err = capsys.readouterr()
    assert out == ""  # nothing of a broken log is printed as if it were sound
    assert err.startswith(f"zkplatform admin: tenant acme: {says}"), err
    assert err.count("\n") == 1


@pytest.mark.parametrize(
    ("tampering", "says"),
    [
        (
            "UPDATE devices SET revoked_at = NULL, revoked_index = NULL WHERE principal_id = 'alice'",
            (
                "the device {alice} of key log entry 0 has a row that disagrees with the log"
                " (revoked_at, revoked_index): the log revokes it at entry 2, its row is live"
                " (it is offered to seal for)"
            ),
        ),
        (
            "UPDATE devices SET revoked_at = 1, revoked_index = 1 WHERE principal_id = 'bob'",
            (
                "the device {bob} of key log entry 1 has a row that disagrees with the log (revoked_at, revoked_index):"
                " the log has it live, its row is revoked"
            ),
        ),
        (
            "UPDATE devices SET agreement_jwk = signing_jwk WHERE principal_id = 'bob'",
            "the device {bob} of key log entry 1 has a row that disagrees with the log (agreement_jwk)",
        ),
        (
            "DELETE FROM devices WHERE principal_id = 'bob'",
            "the device {bob} of key log entry 1 has no row: the server answers as if the log did not publish it",
        ),
        (
            (
                "INSERT INTO devices SELECT tenant_id, principal_id, 'carols-device', signing_jwk, 'carols-key',"
                " agreement_jwk, endorser, created_at, 7, NULL, NULL FROM devices WHERE principal_id = 'bob'"
            ),
            "the device carols-device has a row that no key log entry publishes",
        ),
    ],
    ids=["un-revoked", "revoked", "another key", "a row gone", "a row of no entry"],
)
def test_keys_log_checks_the_device_rows_the_server_answers_from_against_the_log(
    store_url: str, capsys: pytest.CaptureFixture[str], tampering: str, says: str
) -> None:
    alices, bobs = directory(store_url, capsys)
    with database(store_url) as db:
        db.execute(tampering)

    assert admin(store_url, "keys", "log", "--tenant", "acme") == 1

    out, err = capsys.readouterr()
    assert out == ""
    named = says.format(alice=alices.device_id, bob=bobs.device_id)
    assert err == f"zkplatform admin: tenant acme: {named}\n"


def test_keys_log_names_a_log_the_server_would_never_have_appended(
    url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    alices, _ = directory(url, capsys)
    appended(url, (alices, "alice", "revoke"))  # a revoked device revoked again

    assert admin(url, "keys", "log", "--tenant", "acme") == 1

    named = f"key log entry 3 revokes the device {alices.device_id}, which is no live device of its principal"
    assert error_line(capsys) == f"zkplatform admin: tenant acme: {named}\n"


def test_a_device_row_whose_text_is_no_utf8_is_named(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    directory(url, capsys)
    with database(url) as db:  # SQLite keeps whatever bytes a text is given
        db.execute("UPDATE devices SET endorser = CAST(X'FF' AS TEXT) WHERE principal_id = 'bob'")
    named = "the device of key log entry 1 cannot be read: its endorser is not UTF-8 text"

    assert admin(url, "keys", "log", "--tenant", "acme") == 1
    assert error_line(capsys) == f"zkplatform admin: tenant acme: {named}\n"
    assert admin(url, "keys", "list", "--tenant", "acme") == 1
    assert error_line(capsys) == f"zkplatform admin: tenant acme: {named}\n"
