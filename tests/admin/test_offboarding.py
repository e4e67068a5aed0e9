"""`tenant list`, `principal list`, `vault list`, `vault member add|remove`, `principal disable|enable`."""

from __future__ import annotations

import json

import pytest

from tests.admin.conftest import admin, error_line, issue


def lines(capsys: pytest.CaptureFixture[str]) -> list[dict[str, object]]:
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


@pytest.fixture
def team(bootstrapped: str, capsys: pytest.CaptureFixture[str]) -> str:
    assert admin(bootstrapped, "principal", "add", "bob", "--tenant", "acme", "--role", "member") == 0
    assert admin(bootstrapped, "tenant", "add", "globex") == 0
    capsys.readouterr()
    return bootstrapped


def test_listings(team: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert admin(team, "tenant", "list") == 0
    assert lines(capsys) == [{"tenantId": "acme"}, {"tenantId": "globex"}]
    assert admin(team, "principal", "list", "--tenant", "acme") == 0
    assert [(p["principalId"], p["role"], p["disabled"]) for p in lines(capsys)] == [
        ("alice", "owner", False),
        ("bob", "member", False),
    ]
    assert admin(team, "vault", "list", "--tenant", "acme") == 0
    assert lines(capsys) == [{"vaultId": "v1", "tenantId": "acme", "members": ["alice"]}]
    assert admin(team, "vault", "list", "--tenant", "globex") == 0
    assert capsys.readouterr().out == ""  # nothing: not even an empty line


def test_vault_members_are_added_and_removed(team: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert admin(team, "vault", "member", "add", "v1", "bob") == 0
    assert capsys.readouterr().out == "bob is now a member of vault v1\n"
    assert admin(team, "vault", "member", "add", "v1", "bob") == 0
    assert "already a member" in capsys.readouterr().out
    assert admin(team, "vault", "member", "remove", "v1", "alice") == 0
    assert capsys.readouterr().out == "alice is no longer a member of vault v1\n"

    assert admin(team, "vault", "list", "--tenant", "acme", "--table") == 0
    assert capsys.readouterr().out.splitlines() == ["vaultId  tenantId  members", "v1       acme      bob"]


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("vault", "member", "add", "v9", "bob"), "no vault v9"),
        (("vault", "member", "add", "v1", "nobody"), "no principal nobody in tenant acme"),
        (("principal", "disable", "nobody"), "no principal nobody"),
    ],
)
def test_unknown_names_are_exit_1(
    team: str, capsys: pytest.CaptureFixture[str], args: tuple[str, ...], says: str
) -> None:
    assert admin(team, *args) == 1

    assert says in error_line(capsys)


def test_disable_revokes_every_token_and_refuses_new_ones_until_enabled(
    team: str, capsys: pytest.CaptureFixture[str]
) -> None:
    first = issue(team, capsys, "--principal", "bob")
    second = issue(team, capsys, "--principal", "bob")

    assert admin(team, "principal", "disable", "bob") == 0
    revoked = ", ".join(sorted([str(first["tokenId"]), str(second["tokenId"])]))
    assert capsys.readouterr().out == f"principal bob disabled; 2 token(s) revoked: {revoked}\n"
    assert admin(team, "token", "issue", "--principal", "bob") == 1
    assert "principal bob is disabled; nothing was changed" in error_line(capsys)
    assert admin(team, "principal", "list", "--tenant", "acme") == 0
    assert [p["disabled"] for p in lines(capsys)] == [False, True]

    assert admin(team, "principal", "enable", "bob") == 0
    capsys.readouterr()
    assert admin(team, "token", "list", "--principal", "bob") == 0
    assert {t["state"] for t in lines(capsys)} == {"revoked"}  # enabling revives nothing
    issue(team, capsys, "--principal", "bob")
