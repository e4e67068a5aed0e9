"""`principal scopes`: set, add or remove a principal's scopes within its role's bound, audited;
a removal holds for its existing tokens at once, an addition for the tokens issued afterwards."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.admin.conftest import admin, error_line, issue, item, ndjson
from tests.connect import JSON, VAULT_DELETE, headers
from tests.world import serve_in_process
from zkplatform.config import Settings
from zkplatform.pepper import load_pepper
from zkplatform.store import open_store
from zkplatform.wiring import Platform

# What a member was granted before the key directory existed.
BEFORE_DIRECTORY = "broker.tokens.manage,vault.items.delete,vault.items.read,vault.items.write"
DIRECTORY = "directory.keys.publish,directory.keys.read"
LIST_ITEMS = "/platform.v1.VaultService/ListItems"
LIST_KEY_LOG = "/platform.v1.DirectoryService/ListKeyLog"


@pytest.fixture
def team(bootstrapped: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """bob, a member added before the key directory, in vault v1 with item i1."""
    bob = ("principal", "add", "bob", "--tenant", "acme", "--role", "member", "--scopes", BEFORE_DIRECTORY)
    assert admin(bootstrapped, *bob) == 0
    assert admin(bootstrapped, "vault", "member", "add", "v1", "bob") == 0
    assert admin(bootstrapped, "import", ndjson(tmp_path / "items.ndjson", item("i1"))) == 0
    capsys.readouterr()
    return bootstrapped


def scopes(url: str, *args: str) -> int:
    return admin(url, "principal", "scopes", "bob", "--tenant", "acme", *args)


def said(capsys: pytest.CaptureFixture[str]) -> tuple[dict[str, Any], str]:
    """The principal the command printed (one JSON line), and its line on standard error."""
    captured = capsys.readouterr()
    (line,) = captured.out.splitlines()
    (note,) = captured.err.splitlines()
    row: dict[str, Any] = json.loads(line)
    return row, note


def listed(url: str, capsys: pytest.CaptureFixture[str]) -> list[str]:
    """bob's scopes as `principal list` shows them."""
    assert admin(url, "principal", "list", "--tenant", "acme") == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    return next(row["scopes"] for row in rows if row["principalId"] == "bob")


def audit_actions(url: str, capsys: pytest.CaptureFixture[str]) -> list[str]:
    assert admin(url, "audit", "export", "--tenant", "acme") == 0
    return [json.loads(line)["action"] for line in capsys.readouterr().out.splitlines()]


def test_scopes_are_added_removed_and_set(team: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert scopes(team, "--add", DIRECTORY) == 0
    row, note = said(capsys)
    assert row == {
        "principalId": "bob",
        "tenantId": "acme",
        "role": "member",
        "scopes": [
            "broker.tokens.manage",
            "directory.keys.publish",
            "directory.keys.read",
            "vault.items.delete",
            "vault.items.read",
            "vault.items.write",
        ],
        "disabled": False,
    }
    assert note == f"zkplatform admin: principal bob in tenant acme: added {DIRECTORY.replace(',', ', ')}"
    assert listed(team, capsys) == row["scopes"]

    assert scopes(team, "--remove", "vault.items.delete,vault.items.write,broker.tokens.manage") == 0
    row, note = said(capsys)
    assert row["scopes"] == ["directory.keys.publish", "directory.keys.read", "vault.items.read"]
    assert note.endswith(": removed broker.tokens.manage, vault.items.delete, vault.items.write")

    assert scopes(team, "--scopes", "vault.items.read,vault.items.write", "--table") == 0
    captured = capsys.readouterr()
    assert captured.out.splitlines() == [
        "principalId  tenantId  role    scopes                              disabled",
        "bob          acme      member  vault.items.read,vault.items.write  no",
    ]
    assert captured.err.endswith(": added vault.items.write; removed directory.keys.publish, directory.keys.read\n")
    assert listed(team, capsys) == ["vault.items.read", "vault.items.write"]

    assert scopes(team, "--scopes", "") == 0
    assert said(capsys)[0]["scopes"] == []


@pytest.mark.parametrize(
    "args", [("--add", "vault.items.read"), ("--remove", DIRECTORY), ("--scopes", BEFORE_DIRECTORY)]
)
def test_a_change_that_changes_nothing_says_so(
    team: str, capsys: pytest.CaptureFixture[str], args: tuple[str, ...]
) -> None:
    assert scopes(team, *args) == 0

    row, note = said(capsys)
    assert row["scopes"] == BEFORE_DIRECTORY.split(",")
    assert note == "zkplatform admin: principal bob in tenant acme: nothing was changed"
    assert "principal.scopes_changed" not in audit_actions(team, capsys)


@pytest.mark.parametrize(
    "args", [("--add", "directory.keys.read,broker.tokens.mint"), ("--scopes", "broker.tokens.mint")]
)
def test_a_scope_beyond_the_role_is_exit_1_and_nothing_changes(
    team: str, capsys: pytest.CaptureFixture[str], args: tuple[str, ...]
) -> None:
    assert scopes(team, *args) == 1

    # The line `principal add` gives for the same grant.
    line = error_line(capsys)
    assert line.startswith("zkplatform admin: the role member may not hold broker.tokens.mint (it allows ")
    assert line.endswith("); nothing was changed\n")
    assert admin(team, "principal", "add", "eve", "--tenant", "acme", "--role", "member", "--scopes", args[1]) == 1
    assert error_line(capsys) == line
    assert listed(team, capsys) == BEFORE_DIRECTORY.split(",")
    assert "principal.scopes_changed" not in audit_actions(team, capsys)


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("nobody", "--tenant", "acme"), "no principal nobody in tenant acme"),
        (("bob", "--tenant", "globex"), "no tenant globex"),
    ],
)
def test_an_unknown_principal_or_tenant_is_exit_1(
    team: str, capsys: pytest.CaptureFixture[str], args: tuple[str, ...], says: str
) -> None:
    assert admin(team, "principal", "scopes", *args, "--add", DIRECTORY) == 1

    assert error_line(capsys) == f"zkplatform admin: {says}; nothing was changed\n"


@pytest.mark.parametrize(
    "args",
    [
        (),  # none of --scopes, --add, --remove
        ("--add", DIRECTORY, "--remove", "vault.items.read"),  # two of them
        ("--add", "directory.keys.everything"),  # an unknown scope, as `principal add` refuses one
    ],
)
def test_bad_usage_is_exit_2(team: str, capsys: pytest.CaptureFixture[str], args: tuple[str, ...]) -> None:
    assert scopes(team, *args) == 2

    assert "usage: zkplatform admin principal scopes" in capsys.readouterr().err
    assert listed(team, capsys) == BEFORE_DIRECTORY.split(",")


def test_each_change_is_audited_with_the_scopes_before_and_after(team: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert scopes(team, "--add", DIRECTORY) == 0
    assert scopes(team, "--remove", "vault.items.write") == 0
    capsys.readouterr()

    assert admin(team, "audit", "export", "--tenant", "acme") == 0
    events = [json.loads(line) for line in capsys.readouterr().out.splitlines()][-2:]
    with_directory = "broker.tokens.manage,directory.keys.publish,directory.keys.read,vault.items.delete,"
    assert [(e["action"], e["actor"], e["target"]) for e in events] == [
        (
            "principal.scopes_changed",
            {"kind": "operator"},
            {
                "principal": "bob",
                "scopesBefore": BEFORE_DIRECTORY,
                "scopesAfter": with_directory + "vault.items.read,vault.items.write",
            },
        ),
        (
            "principal.scopes_changed",
            {"kind": "operator"},
            {
                "principal": "bob",
                "scopesBefore": with_directory + "vault.items.read,vault.items.write",
                "scopesAfter": with_directory + "vault.items.read",
            },
        ),
    ]
    assert admin(team, "audit", "verify", "--tenant", "acme") == 0


async def answers(url: str, calls: list[tuple[str, str, dict[str, Any]]]) -> list[tuple[int, str]]:
    """Each call (token, path, body) made to the whole app on the store at `url`, with the pepper
    admin issued the tokens under: its status and Connect error code ("" for none)."""
    settings = Settings.from_env()
    store = await open_store(url)
    try:
        platform = Platform.build(store, load_pepper(settings.token_pepper, settings.state_dir))
        async with await serve_in_process(platform) as client:
            results = []
            for secret, path, body in calls:
                response: httpx.Response = await client.post(path, json=body, headers=headers(JSON, secret))
                results.append((response.status_code, response.json().get("code", "")))
            return results
    finally:
        await store.close()


def test_a_removal_holds_for_a_token_issued_before_it_and_an_addition_for_tokens_issued_after(
    team: str, capsys: pytest.CaptureFixture[str]
) -> None:
    before = issue(team, capsys, "--principal", "bob")
    assert before["scopes"] == BEFORE_DIRECTORY.split(",")
    assert scopes(team, "--remove", "vault.items.delete") == 0
    assert scopes(team, "--add", DIRECTORY) == 0
    after = issue(team, capsys, "--principal", "bob")
    old, new = str(before["accessToken"]), str(after["accessToken"])

    assert after["scopes"] == [
        "broker.tokens.manage",
        "directory.keys.publish",
        "directory.keys.read",
        "vault.items.read",
        "vault.items.write",
    ]
    assert asyncio.run(
        answers(
            team,
            [
                (old, LIST_ITEMS, {"vaultId": "v1"}),  # the scopes it still has work
                (old, VAULT_DELETE, {"vaultId": "v1", "itemId": "i1", "baseVersion": "1"}),  # the one removed
                (old, LIST_KEY_LOG, {}),  # made before the directory scopes were added: without them
                (new, LIST_KEY_LOG, {}),
                (new, VAULT_DELETE, {"vaultId": "v1", "itemId": "i1", "baseVersion": "1"}),
            ],
        )
    ) == [(200, ""), (403, "permission_denied"), (403, "permission_denied"), (200, ""), (403, "permission_denied")]
