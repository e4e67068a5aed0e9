"""The TypeScript client (Connect for ECMAScript), generated from the same protos,
against a real server over Connect JSON, Connect binary, gRPC and gRPC-Web."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.server import Server, serving


@pytest.fixture(scope="module")
def demo(ts_tools: Path) -> Path:
    """The compiled demo script."""
    return ts_tools / "demo.js"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with serving(tmp_path_factory.mktemp("node"), "--dev") as server:
        yield server


@pytest.mark.parametrize(
    ("protocol", "vault", "item", "other"),
    [
        ("connect-json", "acme-private", "item-1", "item-2"),
        ("connect-binary", "acme-private", "item-3", "item-4"),
        ("grpc", "acme-private", "item-5", "item-6"),
        ("grpc-web", "acme-shared", "item-1", "item-2"),
    ],
)
def test_node_client(demo: Path, server: Server, protocol: str, vault: str, item: str, other: str) -> None:
    credentials = json.loads((server.log_path.parent / "var" / "dev-credentials.json").read_text())
    alice = next(p["token"] for p in credentials["tenants"][0]["principals"] if p["principalId"] == "alice")

    result = subprocess.run(
        ["node", str(demo), server.base_url, protocol, alice, vault, item, other],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["deleted"]["deleted"] is True
    assert report["deleted"]["version"] == "2"
    assert report["repeatedSame"] is True
    assert report["conflict"] == {
        "code": "Aborted",
        "info": {"reason": "VERSION_MISMATCH", "domain": "zkplatform.dev", "metadata": {"currentVersion": "1"}},
    }
    assert report["minted"] == {"scopes": ["vault.items.read"], "principalId": "alice", "prefix": "zkp_"}
    assert report["unauthenticated"] == "Unauthenticated"
    assert alice not in server.log()


@pytest.mark.parametrize("protocol", ["connect-json", "connect-binary", "grpc", "grpc-web"])
def test_node_client_items(demo: Path, server: Server, protocol: str) -> None:
    """tools/items.ts: every item RPC, GetItem and ListItems with HTTP GET on the Connect protocols."""
    credentials = json.loads((server.log_path.parent / "var" / "dev-credentials.json").read_text())
    bob = next(p["token"] for p in credentials["tenants"][0]["principals"] if p["principalId"] == "bob")
    item_id = f"node-{protocol}"

    result = subprocess.run(
        ["node", str(demo.parent / "items.js"), server.base_url, protocol, bob, "acme-shared", item_id],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["created"]["version"] == "1"
    assert report["repeatedSame"] is True
    assert report["exists"] == {
        "code": "AlreadyExists",
        "info": {"reason": "ITEM_EXISTS", "domain": "zkplatform.dev", "metadata": {"currentVersion": "1"}},
    }
    assert report["updated"] == {"version": "2", "titleHash": "th-2"}
    assert report["stale"]["info"]["metadata"] == {"currentVersion": "2"}
    assert report["got"]["version"] == "2"
    assert report["cacheControl"] == "no-store"
    listed = report["listed"]
    assert len(listed["cursors"]) == 1
    assert item_id in listed["itemIds"]
    assert listed["itemIds"] == sorted(listed["itemIds"])
    assert listed["pages"] == (len(listed["itemIds"]) + 1) // 2
    assert report["unauthenticated"] == "Unauthenticated"
    assert bob not in server.log()
