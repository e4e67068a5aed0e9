"""`token issue` and `token revoke`."""

from __future__ import annotations

import asyncio

import pytest

from tests.admin.conftest import admin, error_line, issue, stored_token


@pytest.fixture
def token(bootstrapped: str, capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    return issue(bootstrapped, capsys, "--principal", "alice")


def test_token_revoke(bootstrapped: str, token: dict[str, object], capsys: pytest.CaptureFixture[str]) -> None:
    assert admin(bootstrapped, "token", "revoke", str(token["tokenId"])) == 0

    assert capsys.readouterr().out == f"token {token['tokenId']} revoked\n"
    record = asyncio.run(stored_token(bootstrapped, str(token["accessToken"])))
    assert record is not None
    assert record.revoked


def test_revoking_an_unknown_token_is_exit_1(bootstrapped: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert admin(bootstrapped, "token", "revoke", "tok_nope") == 1

    assert "no token tok_nope; nothing was changed" in error_line(capsys)


def test_a_secret_given_to_revoke_is_not_repeated(
    bootstrapped: str, token: dict[str, object], capsys: pytest.CaptureFixture[str]
) -> None:
    secret = str(token["accessToken"])

    assert admin(bootstrapped, "token", "revoke", secret) == 1

    error = error_line(capsys)
    assert "not its id" in error
    assert secret not in error
    record = asyncio.run(stored_token(bootstrapped, secret))
    assert record is not None
    assert not record.revoked


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("--principal", "nobody"), "no principal nobody"),
        (("--principal", "ci", "--scopes", "vault.items.read"), "principal ci may not hold vault.items.read"),
    ],
)
def test_token_issue_refusals_are_exit_1(
    bootstrapped: str, capsys: pytest.CaptureFixture[str], args: tuple[str, ...], says: str
) -> None:
    assert admin(bootstrapped, "principal", "add", "ci", "--tenant", "acme", "--role", "service") == 0
    capsys.readouterr()

    assert admin(bootstrapped, "token", "issue", *args) == 1

    assert says in error_line(capsys)


def test_a_bad_pepper_is_exit_2(
    bootstrapped: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ZKPLATFORM_TOKEN_PEPPER", "c2hvcnQ")

    assert admin(bootstrapped, "token", "issue", "--principal", "alice") == 2

    assert "ZKPLATFORM_TOKEN_PEPPER must encode at least" in error_line(capsys)
