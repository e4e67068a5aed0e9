"""`tenant add`, `principal add` (scopes within the role's bound) and `vault add`; bad usage."""

from __future__ import annotations

import pytest

from tests.admin.conftest import admin, error_line


def test_a_principal_gets_scopes_within_its_roles_bound(bootstrapped: str, capsys: pytest.CaptureFixture[str]) -> None:
    member = ("principal", "add", "bob", "--tenant", "acme", "--role", "member")
    assert admin(bootstrapped, *member, "--scopes", "vault.items.read,broker.tokens.mint") == 1
    assert "the role member may not hold broker.tokens.mint" in error_line(capsys)

    assert admin(bootstrapped, *member) == 0
    assert admin(bootstrapped, "principal", "add", "ci", "--tenant", "acme", "--role", "service") == 0
    assert admin(bootstrapped, "principal", "add", "ro", "--tenant", "acme", "--role", "admin", "--scopes", "") == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].endswith(
        "as member with scopes broker.tokens.manage, directory.keys.publish, directory.keys.read,"
        " vault.items.delete, vault.items.read, vault.items.write"
    )
    assert out[1].endswith("as service with no scopes")
    assert out[2].endswith("as admin with no scopes")


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("tenant", "add", "acme"), "tenant acme already exists"),
        (("principal", "add", "bob", "--tenant", "nope", "--role", "member"), "no tenant nope"),
        (("vault", "add", "v2", "--tenant", "acme", "--members", "alice,zed"), "no principal zed in tenant acme"),
    ],
)
def test_directory_refusals_are_exit_1(
    bootstrapped: str, capsys: pytest.CaptureFixture[str], args: tuple[str, ...], says: str
) -> None:
    assert admin(bootstrapped, *args) == 1

    assert f"{says}; nothing was changed" in error_line(capsys)


@pytest.mark.parametrize(
    "args",
    [
        ("tenant", "add", "bad id"),
        ("principal", "add", "bob", "--tenant", "acme", "--role", "king"),
        ("principal", "add", "bob", "--tenant", "acme", "--role", "member", "--scopes", "vault.everything"),
        ("token", "issue", "--principal", "alice", "--ttl", "0"),
        ("purge-tombstones", "--older-than-days", "-3"),
        ("tenant",),
    ],
)
def test_bad_usage_is_exit_2(url: str, capsys: pytest.CaptureFixture[str], args: tuple[str, ...]) -> None:
    assert admin(url, *args) == 2

    assert "usage: zkplatform admin" in capsys.readouterr().err
