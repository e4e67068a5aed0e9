"""The npm package's VaultSync as a consumer installs it (tests/e2e/test_client_packages.py's
`project`), over `serve --dev`: tests/e2e/clients/sync_checks.ts stops syncs from inside their own
events, and each run() must settle. Aborted inside `synced`, run() used to open its watch on a
signal that had already fired, and hang with the watch open: the checks bound every run, so that
it fails rather than hangs. The same checks see the sync tell when it holds the whole vault
(the "caughtUp" event and property), in both modes, after a backlog and after a reconnect."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.connect import JSON, headers
from tests.e2e.server import Server
from tests.e2e.test_client_packages import packages, project, run, server, tokens  # noqa: F401 # fixtures

VAULT = "acme-shared"
MODES = ["watch", "poll"]


@pytest.fixture(scope="module")
def live(server: Server) -> int:  # noqa: F811
    """The vault's live items, as ListItems counts them."""
    answer = httpx.post(
        f"{server.base_url}/platform.v1.VaultService/ListItems",
        json={"vaultId": VAULT, "pageSize": 1000},
        headers=headers(JSON, tokens(server)["bob"]),
        timeout=30,
    )
    assert answer.status_code == 200, answer.text
    return len(answer.json()["items"])


@pytest.fixture(scope="module")
def report(project: Path, server: Server) -> dict[str, Any]:  # noqa: F811
    result = run(
        ["node", str(project / "out" / "sync_checks.js"), server.base_url, tokens(server)["bob"], VAULT], project
    )
    assert result.stderr == ""
    parsed: dict[str, Any] = json.loads(result.stdout)
    return parsed


def settled(events: list[str]) -> dict[str, Any]:
    return {"settled": True, "error": None, "events": events}


@pytest.mark.parametrize("mode", MODES)
def test_a_sync_aborted_inside_synced_settles(report: dict[str, Any], mode: str) -> None:
    assert report[f"{mode}: synced"] == settled(["synced"])


@pytest.mark.parametrize("mode", MODES)
def test_a_sync_aborted_inside_resumed_settles(report: dict[str, Any], mode: str) -> None:
    assert report[f"{mode}: resumed"] == settled(["resumed"])


@pytest.mark.parametrize("mode", MODES)
def test_a_listed_vault_is_caught_up_once_the_changes_after_its_cursor_are_in(
    report: dict[str, Any], live: int, mode: str
) -> None:
    """A watch's caught-up marker, or a poll's first answer with nothing more to come; and a sync
    aborted inside that event settles too."""
    assert report[f"{mode}: caughtUp"] == settled(["synced", f"caughtUp:true:{live}"])


@pytest.mark.parametrize("mode", MODES)
def test_a_backlog_is_caught_up_after_its_changes(report: dict[str, Any], live: int, mode: str) -> None:
    assert report[f"{mode}: backlog"] == settled(["resumed", "changes", f"caughtUp:true:{live}"])


def test_a_reconnected_watch_is_behind_until_its_marker(report: dict[str, Any], live: int) -> None:
    caught_up = f"caughtUp:true:{live}"
    assert report["watch: reconnected"] == settled(["synced", caught_up, "reconnecting:false", caught_up])
