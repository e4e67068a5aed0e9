"""`zkplatform admin` on real stores: bootstrap, import, tokens, purge."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path

import httpx
import pytest

from tests.connect import JSON, VAULT_DELETE, headers
from tests.e2e.server import serving, zkplatform_command
from zkplatform.admin import main
from zkplatform.domain import tokens
from zkplatform.store import open_store

ITEM = {
    "tenantId": "acme",
    "vaultId": "v1",
    "version": "1",
    "kind": "note",
    "titleHash": "dGl0bGU",
    "updatedAt": "2026-01-01T00:00:00Z",
    "encryptedPayload": {"alg": "A256GCM", "nonce": "bm9uY2U", "aad": "", "ciphertext": "Y2lwaGVy", "version": 1},
    "wrappedKeys": [{"recipientId": "alice", "wrapAlg": "A256KW", "wrappedKey": "a2V5"}],
}


@pytest.fixture
def url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("ZKPLATFORM_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.delenv("ZKPLATFORM_STORE", raising=False)
    return f"sqlite:///{tmp_path}/zk.db"


def admin(url: str, *args: str) -> int:
    return main(["--store", url, *args])


def ndjson(path: Path, *items: dict[str, object]) -> str:
    path.write_text("\n".join(json.dumps(item) for item in items) + "\n")
    return str(path)


@pytest.fixture
def bootstrapped(url: str, capsys: pytest.CaptureFixture[str]) -> str:
    assert admin(url, "migrate") == 0
    assert admin(url, "tenant", "add", "acme") == 0
    assert admin(url, "principal", "add", "alice", "--tenant", "acme", "--role", "owner") == 0
    assert admin(url, "vault", "add", "v1", "--tenant", "acme", "--members", "alice") == 0
    capsys.readouterr()
    return url


async def item_ids(url: str) -> set[str]:
    store = await open_store(url)
    try:
        return {i for i in ("i1", "i2", "i3", "i4", "i5") if await store.get_item("v1", i)}
    finally:
        await store.close()


def test_migrate_applies_once(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert admin(url, "migrate") == 0
    assert admin(url, "migrate") == 0

    out = capsys.readouterr().out
    assert "applied migrations 1" in out
    assert "up to date" in out


def test_commands_refuse_a_store_without_schema(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert admin(url, "tenant", "add", "acme") == 2

    assert "admin --store URL migrate" in capsys.readouterr().err


def test_bootstrap_to_a_first_token_that_works_over_http(
    bootstrapped: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    items = ndjson(tmp_path / "items.ndjson", {**ITEM, "itemId": "i1"}, {**ITEM, "itemId": "i2"})
    assert admin(bootstrapped, "import", items) == 0
    assert "imported 2 item(s)" in capsys.readouterr().out
    assert admin(bootstrapped, "token", "issue", "--principal", "alice", "--ttl", "600") == 0
    token = json.loads(capsys.readouterr().out)

    assert tokens.is_well_formed(token["accessToken"])
    assert token["principalId"] == "alice"
    assert token["role"] == "ROLE_OWNER"
    env = {"ZKPLATFORM_STATE_DIR": str(tmp_path / "state")}
    with serving(tmp_path, "--store", bootstrapped, env=env) as server:
        response = httpx.post(
            server.base_url + VAULT_DELETE,
            json={"vaultId": "v1", "itemId": "i2", "baseVersion": "1"},
            headers=headers(JSON, token["accessToken"]),
            timeout=30,
        )
        log = server.log()
    assert response.status_code == 200, response.text
    assert response.json()["item"]["deleted"] is True
    assert response.json()["cursor"]["sequence"] == "3"
    assert token["accessToken"] not in log


def test_a_bad_line_names_its_number_and_imports_nothing(
    bootstrapped: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines: list[dict[str, object]] = [{**ITEM, "itemId": f"i{n}"} for n in range(1, 6)]
    lines[2] = {**ITEM, "itemId": "", "kind": "Bad Kind"}

    assert admin(bootstrapped, "import", ndjson(tmp_path / "bad.ndjson", *lines)) == 1

    error = capsys.readouterr().err
    assert "line 3:" in error
    assert "itemId" in error
    assert "kind" in error
    assert asyncio.run(item_ids(bootstrapped)) == set()


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("{not json", "not an Item"),
        ('{"itemId": "i1", "surprise": 1}', "not an Item"),
        (json.dumps({**ITEM, "itemId": "i1", "updatedAt": "2026-01-01T00:00:00.5Z"}), "whole seconds"),
        (json.dumps({**ITEM, "itemId": "i1", "version": "0"}), "version"),
        (json.dumps({**ITEM, "itemId": "i1", "deleted": True}), "deleted item carries no payload"),
    ],
)
def test_malformed_lines_are_refused(
    bootstrapped: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], line: str, reason: str
) -> None:
    path = tmp_path / "one.ndjson"
    path.write_text(json.dumps({**ITEM, "itemId": "i5"}) + "\n" + line + "\n")

    assert admin(bootstrapped, "import", str(path)) == 1

    error = capsys.readouterr().err
    assert "line 2:" in error
    assert reason in error
    assert asyncio.run(item_ids(bootstrapped)) == set()


def test_a_duplicate_or_an_unknown_vault_imports_nothing(
    bootstrapped: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    duplicate = ndjson(tmp_path / "dup.ndjson", {**ITEM, "itemId": "i1"}, {**ITEM, "itemId": "i1"})
    elsewhere = ndjson(tmp_path / "far.ndjson", {**ITEM, "itemId": "i1"}, {**ITEM, "itemId": "i2", "vaultId": "v9"})

    assert admin(bootstrapped, "import", duplicate) == 1
    assert admin(bootstrapped, "import", elsewhere) == 1

    errors = capsys.readouterr().err
    assert "already exists" in errors
    assert "no vault v9" in errors
    assert asyncio.run(item_ids(bootstrapped)) == set()


def test_token_revoke(bootstrapped: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert admin(bootstrapped, "token", "issue", "--principal", "alice") == 0
    token_id = json.loads(capsys.readouterr().out)["tokenId"]

    assert admin(bootstrapped, "token", "revoke", token_id) == 0
    assert admin(bootstrapped, "token", "revoke", "tok_nope") == 1
    assert "no token tok_nope" in capsys.readouterr().err


def test_roles_bound_the_scopes_and_ids_are_checked(bootstrapped: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        admin(
            bootstrapped,
            "principal",
            "add",
            "bob",
            "--tenant",
            "acme",
            "--role",
            "member",
            "--scopes",
            "broker.tokens.mint",
        )
        == 1
    )
    assert "a member may not hold broker.tokens.mint" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        admin(bootstrapped, "tenant", "add", "-bad id")
    assert admin(bootstrapped, "principal", "add", "ci", "--tenant", "acme", "--role", "service") == 0
    assert "service: no scopes" in capsys.readouterr().out


def test_purge_tombstones(bootstrapped: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old = {
        **ITEM,
        "itemId": "i1",
        "deleted": True,
        "titleHash": "",
        "wrappedKeys": [],
        "updatedAt": "2020-01-01T00:00:00Z",
    }
    old.pop("encryptedPayload")
    recent = {**old, "itemId": "i2", "updatedAt": "2099-01-01T00:00:00Z"}
    assert admin(bootstrapped, "import", ndjson(tmp_path / "t.ndjson", old, recent, {**ITEM, "itemId": "i3"})) == 0

    assert admin(bootstrapped, "purge-tombstones") == 0

    assert "purged 1 tombstone(s)" in capsys.readouterr().out
    assert asyncio.run(item_ids(bootstrapped)) == {"i2", "i3"}


def test_help_is_there() -> None:
    for args in (["admin", "--help"], ["admin", "token", "issue", "--help"], ["admin", "import", "--help"]):
        result = subprocess.run([zkplatform_command(), *args], capture_output=True, text=True, timeout=60, check=False)
        assert result.returncode == 0, result.stderr
        assert "usage: zkplatform admin" in result.stdout
