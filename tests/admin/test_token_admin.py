"""`token list`, `token show`, and `token revoke` of a tree."""

from __future__ import annotations

import asyncio
import json

import pytest

from tests.admin.conftest import admin, error_line, issue
from tests.world import PEPPER
from zkplatform.domain.audit import Actor, ActorKind
from zkplatform.domain.models import Scope
from zkplatform.store import open_store
from zkplatform.wiring import Platform


async def mint_child(url: str, parent_id: str) -> str:
    """A token minted from the token `parent_id`, as the API would: what operators later find."""
    store = await open_store(url)
    try:
        platform = Platform.build(store, PEPPER)
        principal = await store.get_principal("alice")
        parent = await store.get_token(parent_id)
        assert principal is not None
        assert parent is not None
        by = Actor(ActorKind.PRINCIPAL, parent.issued_at, principal.principal_id, parent_id)
        issued = await platform.issuer.mint(principal, {Scope.VAULT_ITEMS_READ}, parent.expires_at, "", 50, by=by)
        return issued.record.token_id
    finally:
        await store.close()


@pytest.fixture
def root(bootstrapped: str, capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    return issue(bootstrapped, capsys, "--principal", "alice")


def test_token_list_shows_every_token_with_its_state_never_a_secret(
    bootstrapped: str, root: dict[str, object], capsys: pytest.CaptureFixture[str]
) -> None:
    child = asyncio.run(mint_child(bootstrapped, str(root["tokenId"])))
    assert admin(bootstrapped, "token", "revoke", child) == 0
    capsys.readouterr()

    assert admin(bootstrapped, "token", "list", "--principal", "alice") == 0

    out = capsys.readouterr().out
    rows = [json.loads(line) for line in out.splitlines()]
    assert {r["tokenId"]: r["state"] for r in rows} == {root["tokenId"]: "live", child: "revoked"}
    assert next(r for r in rows if r["tokenId"] == child)["parentTokenId"] == root["tokenId"]
    assert str(root["accessToken"]) not in out
    assert "secret" not in out.lower()
    assert "hash" not in out.lower()


def test_token_list_as_a_table(bootstrapped: str, root: dict[str, object], capsys: pytest.CaptureFixture[str]) -> None:
    assert admin(bootstrapped, "token", "list", "--principal", "alice", "--table") == 0

    header, line = capsys.readouterr().out.splitlines()
    assert header.split()[:3] == ["tokenId", "principalId", "origin"]
    assert line.split()[:3] == [root["tokenId"], "alice", "TOKEN_ORIGIN_OPERATOR"]


def test_token_show(bootstrapped: str, root: dict[str, object], capsys: pytest.CaptureFixture[str]) -> None:
    assert admin(bootstrapped, "token", "show", str(root["tokenId"])) == 0

    shown = json.loads(capsys.readouterr().out)
    assert shown["tokenId"] == root["tokenId"]
    assert shown["state"] == "live"
    assert "accessToken" not in shown


@pytest.mark.parametrize(
    ("args", "says"),
    [(("show", "tok_nope"), "no token tok_nope"), (("list", "--principal", "nobody"), "no principal nobody")],
)
def test_unknown_tokens_and_principals_are_exit_1(
    bootstrapped: str, capsys: pytest.CaptureFixture[str], args: tuple[str, ...], says: str
) -> None:
    assert admin(bootstrapped, "token", *args) == 1

    assert says in error_line(capsys)


def test_token_revoke_takes_the_tree(
    bootstrapped: str, root: dict[str, object], capsys: pytest.CaptureFixture[str]
) -> None:
    child = asyncio.run(mint_child(bootstrapped, str(root["tokenId"])))
    grandchild = asyncio.run(mint_child(bootstrapped, child))
    capsys.readouterr()

    assert admin(bootstrapped, "token", "revoke", str(root["tokenId"])) == 0

    assert capsys.readouterr().out == (
        f"token {root['tokenId']} revoked, with 2 token(s) minted from it: {', '.join(sorted([child, grandchild]))}\n"
    )
    assert admin(bootstrapped, "token", "show", grandchild) == 0
    assert json.loads(capsys.readouterr().out)["state"] == "revoked"
