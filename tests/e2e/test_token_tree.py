"""The token tree under a real `zkplatform serve`: a parent revoked, every descendant refused,
on every store, and on the SQL stores across two workers; an operator disables a principal
and removes a member while the server runs."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator, Mapping
from pathlib import Path

import httpx
import pytest

from tests.connect import BROKER_MINT, JSON, VAULT_DELETE, headers
from tests.e2e.server import Server, serving, zkplatform_command
from tests.e2e.test_durable import ENV, seeded

REVOKE = "/platform.v1.BrokerService/RevokeToken"
LIST = "/platform.v1.BrokerService/ListTokens"
# Enough calls that, with keep-alive off, both workers answer some of them (SO_REUSEPORT spreads
# new connections): a descendant refused by only one worker would show here.
CALLS_PER_TOKEN = 8


@pytest.fixture(params=["memory", "sqlite", "postgresql"])
def server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Server, str]]:
    """A running server and alice's token: the memory store (development mode, one worker),
    or a SQL store seeded by an operator and served by two workers."""
    if request.param == "memory":
        with serving(tmp_path, "--dev", env=ENV) as running:
            credentials = json.loads((tmp_path / "var" / "dev-credentials.json").read_text())
            alice = next(
                p["token"] for t in credentials["tenants"] for p in t["principals"] if p["principalId"] == "alice"
            )
            yield running, alice
        return
    url = f"sqlite:///{tmp_path}/zk.db" if request.param == "sqlite" else request.getfixturevalue("postgres_url")
    world = seeded(url)
    with serving(tmp_path, "--store", url, "--workers", "2", env=ENV) as running:
        yield running, world.token("alice")


def call(server: Server, path: str, body: Mapping[str, object], token: str) -> httpx.Response:
    # A new connection per call: with two workers, the calls land on both.
    return httpx.post(
        server.base_url + path, json=body, headers={**headers(JSON, token), "Connection": "close"}, timeout=30
    )


def mint(server: Server, token: str) -> dict[str, str]:
    body = {"tenantId": "acme", "requestedScopes": ["vault.items.read", "vault.items.delete", "broker.tokens.mint"]}
    response = call(server, BROKER_MINT, body, token)
    assert response.status_code == 200, response.text
    minted: dict[str, str] = response.json()["token"]
    return minted


def statuses(server: Server, token: str) -> set[int]:
    """What deleting an item that is not there answers, over fresh connections: 404 while the
    token works, 401 once it is refused."""
    body = {"vaultId": "acme-shared", "itemId": "no-such-item", "baseVersion": "1"}
    return {call(server, VAULT_DELETE, body, token).status_code for _ in range(CALLS_PER_TOKEN)}


def test_revoking_a_parent_refuses_its_whole_tree_on_every_worker(server: tuple[Server, str]) -> None:
    running, alice = server
    parent = mint(running, alice)
    child = mint(running, parent["accessToken"])
    grandchild = mint(running, child["accessToken"])
    great = mint(running, grandchild["accessToken"])
    sibling = mint(running, alice)
    before = [statuses(running, t["accessToken"]) for t in (parent, child, grandchild, great)]

    revoked = call(running, REVOKE, {"tokenId": parent["tokenId"]}, alice)

    assert before == [{404}] * 4
    assert revoked.status_code == 200, revoked.text
    assert sorted(revoked.json()["revokedTokenIds"]) == sorted(t["tokenId"] for t in (parent, child, grandchild, great))
    assert [statuses(running, t["accessToken"]) for t in (parent, child, grandchild, great)] == [{401}] * 4
    assert statuses(running, sibling["accessToken"]) == {404}
    assert statuses(running, alice) == {404}
    listed = call(running, LIST, {}, alice).json()["tokens"]
    listed_ids = {t["tokenId"] for t in listed}
    assert sibling["tokenId"] in listed_ids
    assert len(listed_ids) == 2  # the sibling and alice's own: nothing of the revoked tree


def admin(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [zkplatform_command(), "admin", "--store", url, *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**_environment(), **ENV},
        check=False,
    )


def _environment() -> dict[str, str]:
    import os  # noqa: PLC0415 # only the subprocess needs it

    return dict(os.environ)


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/zk.db"
    url: str = request.getfixturevalue("postgres_url")
    return url


def test_an_operator_offboards_a_principal_while_the_server_runs(tmp_path: Path, store_url: str) -> None:
    world = seeded(store_url)
    alice, bob = world.token("alice"), world.token("bob")
    with serving(tmp_path, "--store", store_url, "--workers", "2", env=ENV) as running:
        child = mint(running, alice)
        grandchild = mint(running, child["accessToken"])
        removed = admin(store_url, "vault", "member", "remove", "acme-shared", "bob")
        bob_after_removal = call(
            running, VAULT_DELETE, {"vaultId": "acme-shared", "itemId": "item-1", "baseVersion": "1"}, bob
        )
        disabled = admin(store_url, "principal", "disable", "alice")
        refused = [statuses(running, t) for t in (alice, child["accessToken"], grandchild["accessToken"])]
        reissue = admin(store_url, "token", "issue", "--principal", "alice")

    assert removed.returncode == 0, removed.stderr
    assert bob_after_removal.status_code == 403  # at once: membership is read on every call
    assert disabled.returncode == 0, disabled.stderr
    assert "3 token(s) revoked" in disabled.stdout
    assert refused == [{401}] * 3
    assert reissue.returncode == 1
    assert "principal alice is disabled" in reissue.stderr
