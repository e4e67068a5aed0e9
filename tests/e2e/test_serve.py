"""A real `zkplatform serve` process on 127.0.0.1, called over HTTP."""

from __future__ import annotations

import json
import stat
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.connect import BROKER_MINT, JSON, VAULT_DELETE, error_of, headers
from tests.e2e.server import serving, zkplatform_command


def test_serve_needs_a_token(tmp_path: Path) -> None:
    with serving(tmp_path, "--store", "memory:") as server:
        response = httpx.post(
            server.base_url + VAULT_DELETE,
            json={"vaultId": "vault-1", "itemId": "item-1", "baseVersion": "1"},
            headers=headers(JSON),
            timeout=10,
        )
        missing_header = httpx.post(
            server.base_url + VAULT_DELETE, json={}, headers={"Content-Type": "application/json"}, timeout=10
        )

    assert response.status_code == 401
    assert error_of(response)["code"] == "unauthenticated"
    assert error_of(missing_header)["code"] == "invalid_argument"


def _principal(credentials: dict[str, Any], principal_id: str) -> dict[str, str]:
    for tenant in credentials["tenants"]:
        for principal in tenant["principals"]:
            if principal["principalId"] == principal_id:
                return dict(principal)
    raise KeyError(principal_id)


def test_dev_mode_seeds_data_and_deletes_over_http(tmp_path: Path) -> None:
    path = tmp_path / "creds" / "dev.json"
    with serving(tmp_path, "--dev", "--dev-credentials", str(path)) as server:
        credentials = json.loads(path.read_text())
        alice = _principal(credentials, "alice")["token"]
        url = credentials["baseUrl"] + VAULT_DELETE
        request = {"vaultId": "acme-private", "itemId": "item-1", "baseVersion": "1"}
        first = httpx.post(url, json=request, headers=headers(JSON, alice), timeout=10)
        repeat = httpx.post(url, json=request, headers=headers(JSON, alice), timeout=10)
        bob = _principal(credentials, "bob")["token"]
        refused = httpx.post(url, json={**request, "itemId": "item-2"}, headers=headers(JSON, bob), timeout=10)
        log = server.log()

    assert credentials["baseUrl"] == server.base_url
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert first.status_code == 200, first.text
    assert first.json()["item"]["deleted"] is True
    assert first.json()["item"]["version"] == "2"
    assert repeat.content == first.content
    assert error_of(refused)["code"] == "permission_denied"
    assert str(path) in log  # the path is printed ...
    for tenant in credentials["tenants"]:
        for principal in tenant["principals"]:
            assert principal["token"] not in log  # ... the tokens never are


def test_dev_data_set_matches_the_contract(tmp_path: Path) -> None:
    with serving(tmp_path, "--dev"):
        credentials = json.loads((tmp_path / "var" / "dev-credentials.json").read_text())

    tenants = credentials["tenants"]
    assert len(tenants) == 2
    first, second = tenants
    roles = {p["principalId"]: p["role"] for p in first["principals"]}
    assert sorted(roles.values()) == ["member", "member", "owner"]
    owner = next(p for p, r in roles.items() if r == "owner")
    member = next(p for p, r in roles.items() if r == "member")
    assert len(first["vaults"]) == 2
    assert any(owner in v["members"] and member not in v["members"] for v in first["vaults"])
    assert len(second["principals"]) == 1
    assert len(second["vaults"]) == 1
    for tenant in tenants:
        for vault in tenant["vaults"]:
            assert len(vault["items"]) >= 4
            assert all(item["version"] == 1 for item in vault["items"])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--store", "nosuch://x"], "unsupported store"),
        (["--dev", "--workers", "2"], "--workers 1"),
        (["--dev-credentials", "x.json"], "only makes sense with --dev"),
    ],
)
def test_serve_refuses_bad_settings_clearly(tmp_path: Path, args: list[str], message: str) -> None:
    result = subprocess.run(
        [zkplatform_command(), "serve", *args], capture_output=True, text=True, timeout=60, check=False, cwd=tmp_path
    )

    assert result.returncode == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_dev_mode_mints_a_narrower_token_over_http(tmp_path: Path) -> None:
    path = tmp_path / "dev.json"
    with serving(tmp_path, "--dev", "--dev-credentials", str(path)) as server:
        credentials = json.loads(path.read_text())
        alice = _principal(credentials, "alice")["token"]
        minted = httpx.post(
            server.base_url + BROKER_MINT,
            json={"tenantId": "acme", "requestedScopes": ["vault.items.delete"], "requestedTtlSeconds": 300},
            headers=headers(JSON, alice),
            timeout=10,
        )
        narrow = minted.json()["token"]["accessToken"]
        deleted = httpx.post(
            server.base_url + VAULT_DELETE,
            json={"vaultId": "acme-shared", "itemId": "item-3", "baseVersion": "1"},
            headers=headers(JSON, narrow),
            timeout=10,
        )
        refused = httpx.post(
            server.base_url + BROKER_MINT,
            json={"tenantId": "acme", "requestedScopes": ["vault.items.read"]},
            headers=headers(JSON, narrow),
            timeout=10,
        )
        log = server.log()

    assert minted.status_code == 200, minted.text
    assert minted.json()["token"]["scopes"] == ["vault.items.delete"]
    assert deleted.status_code == 200, deleted.text
    assert deleted.json()["item"]["deleted"] is True
    assert error_of(refused)["code"] == "permission_denied"
    assert narrow not in log
    assert alice not in log
