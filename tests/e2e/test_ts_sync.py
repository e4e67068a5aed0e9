"""The npm package's VaultSync as a consumer installs it (tests/e2e/test_client_packages.py's
`project`), over `serve --dev`: tests/e2e/clients/sync_checks.ts stops syncs from inside their own
events, and each run() must settle. Aborted inside `synced`, run() used to open its watch on a
signal that had already fired, and hang with the watch open: the checks bound every run, so that
it fails rather than hangs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.server import Server
from tests.e2e.test_client_packages import packages, project, run, server, tokens  # noqa: F401 # fixtures

VAULT = "acme-shared"


@pytest.fixture(scope="module")
def report(project: Path, server: Server) -> dict[str, Any]:  # noqa: F811
    result = run(
        ["node", str(project / "out" / "sync_checks.js"), server.base_url, tokens(server)["bob"], VAULT], project
    )
    assert result.stderr == ""
    parsed: dict[str, Any] = json.loads(result.stdout)
    return parsed


@pytest.mark.parametrize("mode", ["watch", "poll"])
def test_a_sync_aborted_inside_synced_settles(report: dict[str, Any], mode: str) -> None:
    assert report[f"{mode}: synced"] == {"settled": True, "error": None, "events": ["synced"]}


@pytest.mark.parametrize("mode", ["watch", "poll"])
def test_a_sync_aborted_inside_resumed_settles(report: dict[str, Any], mode: str) -> None:
    assert report[f"{mode}: resumed"] == {"settled": True, "error": None, "events": ["resumed"]}
