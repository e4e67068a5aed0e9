"""`audit export` and `audit verify` through `zkplatform admin`, on SQLite and PostgreSQL:
what operator commands leave in the trail, and what verify names once the tables are
tampered with directly in SQL, as someone with access to the database could."""

from __future__ import annotations

import contextlib
import hashlib
import json
import sqlite3
import subprocess
from collections.abc import Callable
from typing import Any

import psycopg
import pytest

from tests.admin.conftest import admin, error_line, issue
from tests.e2e.server import zkplatform_command
from zkplatform.admin import audit

OPERATOR = {"kind": "operator"}
EDITED = "does not match its hash (edited, or an earlier event was)"


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, url: str) -> str:
    return url if request.param == "sqlite" else str(request.getfixturevalue("postgres_url"))


def operate(url: str, capsys: pytest.CaptureFixture[str]) -> tuple[list[dict[str, object]], list[tuple[str, ...]]]:
    """Operator commands of every kind that changes state; the tokens issued, and the trail
    expected of them: (tenant, action, target as sorted (kind, id) pairs) per event."""
    for args in (
        ("migrate",),
        ("tenant", "add", "acme"),
        ("tenant", "add", "beta"),
        ("principal", "add", "alice", "--tenant", "acme", "--role", "owner"),
        ("principal", "add", "bob", "--tenant", "acme", "--role", "member"),
        ("vault", "add", "v1", "--tenant", "acme"),  # its first members' events: tests/contract
        ("vault", "member", "add", "v1", "bob"),
        ("vault", "member", "remove", "v1", "bob"),
    ):
        assert admin(url, *args) == 0, capsys.readouterr().err
    first = issue(url, capsys, "--principal", "alice")
    assert admin(url, "token", "revoke", str(first["tokenId"])) == 0
    second = issue(url, capsys, "--principal", "bob")
    assert admin(url, "principal", "disable", "bob") == 0
    assert admin(url, "principal", "add", "carol", "--tenant", "beta", "--role", "admin") == 0
    capsys.readouterr()
    one, two = str(first["tokenId"]), str(second["tokenId"])
    expected = [
        ("acme", "tenant.added", "tenant=acme"),
        ("acme", "principal.added", "principal=alice"),
        ("acme", "principal.added", "principal=bob"),
        ("acme", "vault.added", "vault=v1"),
        ("acme", "vault.member_added", "principal=bob", "vault=v1"),
        ("acme", "vault.member_removed", "principal=bob", "vault=v1"),
        ("acme", "token.issued", f"token={one}"),
        ("acme", "token.revoked", f"root={one}", f"token={one}"),
        ("acme", "token.issued", f"token={two}"),
        ("acme", "principal.disabled", "principal=bob"),
        ("acme", "token.revoked", f"root={two}", f"token={two}"),  # revoked by the disable
        ("beta", "tenant.added", "tenant=beta"),
        ("beta", "principal.added", "principal=carol"),
    ]
    return [first, second], expected


def export(url: str, capsys: pytest.CaptureFixture[str], *args: str) -> list[dict[str, Any]]:
    """`audit export`: its lines, each parsed, with nothing else on standard output or error."""
    assert admin(url, "audit", "export", *args) == 0
    out, err = capsys.readouterr()
    assert err == ""
    assert out == "" or out.endswith("\n")
    return [json.loads(line) for line in out.splitlines()]


def summary(line: dict[str, Any]) -> tuple[str, ...]:
    return (line["tenant"], line["action"], *(f"{kind}={id_}" for kind, id_ in sorted(line["target"].items())))


def test_export_prints_each_operator_change_as_one_chained_event(
    store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _, expected = operate(store_url, capsys)

    lines = export(store_url, capsys)

    assert [summary(line) for line in lines] == expected
    assert [(line["tenant"], line["sequence"]) for line in lines] == [
        *(("acme", n) for n in range(1, 12)),
        *(("beta", n) for n in range(1, 3)),
    ]
    assert all(line["actor"] == OPERATOR and line["requestId"] == "" for line in lines)
    assert all(isinstance(line["time"], int) and line["time"] > 1_700_000_000 for line in lines)
    # The hashes chain, recomputed here from the exported fields: the event's bytes are its
    # fields but tenant, sequence and hash, as compact JSON with sorted keys.
    previous = {"acme": bytes(32), "beta": bytes(32)}
    for line in lines:
        fields = {key: value for key, value in line.items() if key not in {"tenant", "sequence", "hash"}}
        event = json.dumps(fields, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
        previous[line["tenant"]] = hashlib.sha256(previous[line["tenant"]] + event).digest()
        assert line["hash"] == previous[line["tenant"]].hex(), line


def test_export_since_and_tenant_filter(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    _, expected = operate(url, capsys)

    since = export(url, capsys, "--since", "10")
    acme = export(url, capsys, "--tenant", "acme")
    beta_since = export(url, capsys, "--tenant", "beta", "--since", "1")
    past_the_end = export(url, capsys, "--tenant", "beta", "--since", "2")

    assert [(line["tenant"], line["sequence"]) for line in since] == [("acme", 11)]
    assert [summary(line) for line in acme] == expected[:11]
    assert [(line["tenant"], line["sequence"], summary(line)) for line in beta_since] == [("beta", 2, expected[12])]
    assert past_the_end == []


def test_export_pages_through_a_trail_longer_than_a_page(
    url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    operate(url, capsys)
    whole = export(url, capsys)

    monkeypatch.setattr(audit, "PAGE", 2)  # acme's 11 events: five full pages and a last one
    paged = export(url, capsys)
    assert admin(url, "audit", "verify") == 0

    assert paged == whole
    assert capsys.readouterr().out == "verified 13 event(s) in 2 tenant(s)\n"


def test_no_secret_in_the_export(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    issued, _ = operate(url, capsys)

    assert admin(url, "audit", "export") == 0
    out = capsys.readouterr().out

    secrets = [str(token["accessToken"]) for token in issued]
    assert all(secret.startswith("zkp_") for secret in secrets)
    assert [secret for secret in secrets if secret in out or secret[4:] in out] == []
    assert all(str(token["tokenId"]) in out for token in issued)  # the public ids are there


def lengthen(url: str, events: int) -> None:
    """Beta's chain continued, correctly, with copies of its first event, head and all."""
    with contextlib.closing(sqlite3.connect(url.removeprefix("sqlite:///"))) as db, db:
        sequence, previous = db.execute("SELECT sequence, hash FROM audit_heads WHERE tenant_id = 'beta'").fetchone()
        [event] = db.execute("SELECT event FROM audit_events WHERE tenant_id = 'beta' AND sequence = 1").fetchone()
        rows = []
        for n in range(sequence + 1, sequence + events + 1):
            previous = hashlib.sha256(previous + event).digest()
            rows.append(("beta", n, event, previous))
        db.executemany("INSERT INTO audit_events (tenant_id, sequence, event, hash) VALUES (?, ?, ?, ?)", rows)
        db.execute("UPDATE audit_heads SET sequence = ?, hash = ? WHERE tenant_id = 'beta'", (n, previous))


@pytest.mark.e2e  # runs the console script
def test_export_stops_quietly_when_its_reader_does(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    operate(url, capsys)
    lengthen(url, 2000)  # some 400 KB: more than a pipe holds, so the export is still writing
    assert admin(url, "audit", "verify") == 0  # still a sound chain
    assert capsys.readouterr().out == "verified 2013 event(s) in 2 tenant(s)\n"
    command = [zkplatform_command(), "admin", "--store", url, "audit", "export"]

    # As `zkplatform admin audit export | head -1`.
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as export:
        assert export.stdout is not None
        assert export.stderr is not None
        first = export.stdout.readline()
        export.stdout.close()
        err = export.stderr.read()
        code = export.wait(timeout=60)

    assert json.loads(first)["sequence"] == 1
    assert (code, err) == (0, b"")


@pytest.mark.parametrize("command", ["export", "verify"])
def test_a_tenant_without_a_trail_is_refused(url: str, capsys: pytest.CaptureFixture[str], command: str) -> None:
    operate(url, capsys)

    assert admin(url, "audit", command, "--tenant", "nope") == 1

    assert error_line(capsys) == "zkplatform admin: no audit events for tenant nope\n"


def test_verify_passes_on_an_untouched_store(store_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    operate(store_url, capsys)

    assert admin(store_url, "audit", "verify") == 0
    assert capsys.readouterr() == ("verified 13 event(s) in 2 tenant(s)\n", "")
    assert admin(store_url, "audit", "verify", "--tenant", "beta") == 0
    assert capsys.readouterr() == ("verified 2 event(s) in 1 tenant(s)\n", "")


def test_verify_passes_on_a_store_without_events(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert admin(url, "migrate") == 0
    capsys.readouterr()

    assert admin(url, "audit", "verify") == 0
    assert admin(url, "audit", "export") == 0

    assert capsys.readouterr() == ("verified 0 event(s) in 0 tenant(s)\n", "")


def sql(url: str, statement: str, *params: object) -> list[tuple[Any, ...]]:
    """One statement on the store's database, behind the store's back (placeholders: %s)."""
    if url.startswith("sqlite:///"):
        with contextlib.closing(sqlite3.connect(url.removeprefix("sqlite:///"))) as lite, lite:
            return lite.execute(statement.replace("%s", "?"), params).fetchall()
    with psycopg.connect(url, autocommit=True) as pg:
        cursor = pg.execute(statement, params)
        return cursor.fetchall() if cursor.description else []


def stored(url: str, sequence: int) -> tuple[bytes, bytes]:
    [(event, hash_)] = sql(
        url, "SELECT event, hash FROM audit_events WHERE tenant_id = 'acme' AND sequence = %s", sequence
    )
    return bytes(event), bytes(hash_)


def edit(url: str, sequence: int) -> None:
    event, _ = stored(url, sequence)
    sql(url, "UPDATE audit_events SET event = %s WHERE tenant_id = 'acme' AND sequence = %s", edited(event), sequence)


def edited(event: bytes) -> bytes:
    assert b'"v1"' in event
    return event.replace(b'"v1"', b'"v9"')


def edit_and_rehash(url: str, sequence: int) -> None:
    """An edit that also recomputes the event's own hash: that event matches again, so the
    chain stops matching at the next one, whose hash was made from the old one. A chain
    names where it stops matching, which is not always the event that was changed."""
    event, _ = stored(url, sequence)
    _, previous = stored(url, sequence - 1)
    changed = edited(event)
    sql(
        url,
        "UPDATE audit_events SET event = %s, hash = %s WHERE tenant_id = 'acme' AND sequence = %s",
        changed,
        hashlib.sha256(previous + changed).digest(),
        sequence,
    )


def delete(url: str, sequence: int) -> None:
    sql(url, "DELETE FROM audit_events WHERE tenant_id = 'acme' AND sequence = %s", sequence)


def append_behind_the_head(url: str, sequence: int) -> None:
    """An event added after the last one, chained correctly, without moving the head."""
    event, previous = stored(url, sequence - 1)
    sql(
        url,
        "INSERT INTO audit_events (tenant_id, sequence, event, hash) VALUES ('acme', %s, %s, %s)",
        sequence,
        event,
        hashlib.sha256(previous + event).digest(),
    )


def add_below_one(url: str, sequence: int) -> None:
    """An event numbered 0 or below, where no store writes one, and no read "after 0" sees it."""
    event, hash_ = stored(url, 1)
    sql(
        url,
        "INSERT INTO audit_events (tenant_id, sequence, event, hash) VALUES ('acme', %s, %s, %s)",
        sequence,
        event,
        hash_,
    )


@pytest.mark.parametrize(
    ("tamper", "sequence", "named"),
    [
        (add_below_one, 0, "event 0 is numbered below 1, where no event can be"),
        (add_below_one, -3, "event -3 is numbered below 1, where no event can be"),
        (edit, 4, f"event 4 {EDITED}"),
        (edit_and_rehash, 4, f"event 5 {EDITED}"),  # the next event: see edit_and_rehash
        (delete, 6, "event 6 is missing"),
        (delete, 11, "event 11 is missing (the chain's head is at 11)"),  # the last one, the head kept
        (append_behind_the_head, 12, "event 12 was added after the chain's head"),
    ],
    ids=["zero", "negative", "edited", "edited-and-rehashed", "middle-deleted", "last-deleted", "appended"],
)
def test_verify_names_where_a_tampered_chain_stops_matching(
    store_url: str,
    capsys: pytest.CaptureFixture[str],
    tamper: Callable[[str, int], None],
    sequence: int,
    named: str,
) -> None:
    operate(store_url, capsys)

    tamper(store_url, sequence)

    assert admin(store_url, "audit", "verify") == 1
    out, err = capsys.readouterr()
    assert (out, err) == ("", f"zkplatform admin: tenant acme: {named}\n")
    # The other tenant's chain is untouched, and still verifies on its own.
    assert admin(store_url, "audit", "verify", "--tenant", "beta") == 0


def test_verify_finds_a_break_on_a_later_page(
    url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    operate(url, capsys)
    monkeypatch.setattr(audit, "PAGE", 2)
    delete(url, 5)  # the first of the third page

    assert admin(url, "audit", "verify") == 1

    assert error_line(capsys) == "zkplatform admin: tenant acme: event 5 is missing\n"


def test_verify_finds_a_tenant_whose_whole_trail_was_deleted(
    store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # A tenant's first event is its creation, in the same transaction: a tenant of the
    # directory with neither events nor a head has lost its trail.
    operate(store_url, capsys)
    sql(store_url, "DELETE FROM audit_events WHERE tenant_id = 'beta'")
    sql(store_url, "DELETE FROM audit_heads WHERE tenant_id = 'beta'")
    named = "zkplatform admin: tenant beta: has no audit trail (no events and no chain head), though it exists\n"

    assert admin(store_url, "audit", "verify") == 1
    assert capsys.readouterr() == ("", named)
    assert admin(store_url, "audit", "verify", "--tenant", "beta") == 1
    assert capsys.readouterr() == ("", named)
    assert admin(store_url, "audit", "verify", "--tenant", "acme") == 0


EVENT_4 = "UPDATE audit_events SET {} WHERE tenant_id = 'acme' AND sequence = 4"


@pytest.mark.parametrize(
    ("statement", "named"),
    [
        (EVENT_4.format("event = CAST(event AS TEXT)"), "event 4 cannot be read: its event holds text, not bytes"),
        (EVENT_4.format("hash = hex(hash)"), "event 4 cannot be read: its hash holds text, not bytes"),
        # Text that is no UTF-8: the driver cannot even decode it (it was "unexpected error (AttributeError)").
        (
            EVENT_4.format("hash = CAST(X'FF' || hash AS TEXT)"),
            "event 4 cannot be read: its hash holds text, not bytes",
        ),
        (EVENT_4.format("sequence = 'x'"), "event x cannot be read: its sequence holds text, not an integer"),
        (
            "UPDATE audit_heads SET hash = hex(hash) WHERE tenant_id = 'acme'",
            "the chain's head cannot be read: its hash holds text, not bytes",
        ),
        (
            "UPDATE audit_heads SET hash = CAST(X'FF' || hash AS TEXT) WHERE tenant_id = 'acme'",
            "the chain's head cannot be read: its hash holds text, not bytes",
        ),
    ],
    ids=["event", "hash", "undecodable hash", "sequence", "head", "undecodable head"],
)
def test_verify_names_an_event_whose_column_holds_another_type(
    url: str, capsys: pytest.CaptureFixture[str], statement: str, named: str
) -> None:
    # SQLite keeps whatever a column is given: a value of another type is named, not a TypeError.
    operate(url, capsys)
    sql(url, statement)

    assert admin(url, "audit", "verify") == 1
    assert error_line(capsys) == f"zkplatform admin: tenant acme: {named}\n"
