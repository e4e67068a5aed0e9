"""A real `zkplatform serve` process on 127.0.0.1, called over HTTP."""

from __future__ import annotations

import subprocess
from pathlib import Path

import httpx

from tests.connect import JSON, VAULT_DELETE, error_of, headers
from tests.e2e.server import serving, zkplatform_command


def test_serve_answers_connect_errors_over_http(tmp_path: Path) -> None:
    with serving(tmp_path) as server:
        response = httpx.post(
            server.base_url + VAULT_DELETE,
            json={"vaultId": "vault-1", "itemId": "item-1", "baseVersion": "1"},
            headers=headers(JSON),
            timeout=10,
        )
        missing_header = httpx.post(
            server.base_url + VAULT_DELETE, json={}, headers={"Content-Type": "application/json"}, timeout=10
        )

    assert response.status_code == 501
    assert error_of(response)["code"] == "unimplemented"
    assert error_of(missing_header)["code"] == "invalid_argument"


def test_serve_refuses_an_unknown_store(tmp_path: Path) -> None:
    result = subprocess.run(
        [zkplatform_command(), "serve", "--store", "nosuch://x"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert result.returncode == 2
    assert "unsupported store" in result.stderr
    assert "Traceback" not in result.stderr
