"""From an empty store to a first token the server accepts: the operator's bootstrap."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest

from tests.admin.conftest import admin, bootstrap, issue, item, ndjson, stored_items, stored_token
from tests.connect import JSON, VAULT_DELETE, headers
from tests.e2e.server import serving
from zkplatform.config import Settings
from zkplatform.domain import tokens


def test_bootstrap_from_an_empty_sqlite_file_to_a_first_token(
    url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bootstrap(url)
    items = ndjson(tmp_path / "items.ndjson", item("i1"), "", item("i2"))
    assert admin(url, "import", items) == 0
    assert capsys.readouterr().out.endswith("imported 2 item(s)\n")

    token = issue(url, capsys, "--principal", "alice", "--ttl", "600")

    secret = str(token["accessToken"])
    assert secret.startswith("zkp_")
    assert tokens.is_well_formed(secret)
    assert token["principalId"] == "alice"
    assert token["tenantId"] == "acme"
    assert token["role"] == "ROLE_OWNER"
    assert token["scopes"] == [
        "broker.tokens.manage",
        "broker.tokens.mint",
        "directory.keys.publish",
        "directory.keys.read",
        "vault.items.delete",
        "vault.items.read",
        "vault.items.write",
    ]
    record = asyncio.run(stored_token(url, secret))
    assert record is not None
    assert record.token_id == token["tokenId"]
    assert record.expires_at - record.issued_at == 600
    assert (Path(Settings.from_env().state_dir) / "token-pepper").exists()
    stored = asyncio.run(stored_items(url))
    assert set(stored) == {"i1", "i2"}
    assert stored["i1"].updated_at == 1_767_225_600  # 2026-01-01T00:00:00Z


def test_the_bootstrap_works_on_postgresql(
    postgres_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bootstrap(postgres_url)
    assert admin(postgres_url, "import", ndjson(tmp_path / "items.ndjson", item("i1"))) == 0

    token = issue(postgres_url, capsys, "--principal", "alice", "--scopes", "vault.items.read")

    assert token["scopes"] == ["vault.items.read"]
    assert asyncio.run(stored_token(postgres_url, str(token["accessToken"]))) is not None
    assert set(asyncio.run(stored_items(postgres_url))) == {"i1"}


@pytest.mark.e2e  # runs a real server
def test_a_token_issued_by_admin_works_with_the_server(
    bootstrapped: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert admin(bootstrapped, "import", ndjson(tmp_path / "items.ndjson", item("i1"))) == 0
    secret = str(issue(bootstrapped, capsys, "--principal", "alice")["accessToken"])

    # The same state directory: the server finds the pepper the token was issued under.
    with serving(tmp_path, "--store", bootstrapped, env={"ZKPLATFORM_STATE_DIR": str(tmp_path / "state")}) as server:
        response = httpx.post(
            server.base_url + VAULT_DELETE,
            json={"vaultId": "v1", "itemId": "i1", "baseVersion": "1"},
            headers=headers(JSON, secret),
            timeout=30,
        )
        log = server.log()

    assert response.status_code == 200, response.text
    assert response.json()["item"]["deleted"] is True
    assert secret not in log
