"""The client packages as other teams get them (`make clients`): the wheel installed into a fresh
venv without the server, the npm tarball installed into an empty Node project; each syncs a vault
of a real server and sees a change made by another client arrive through the watch."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.server import Server, serving
from tests.e2e.test_sync_client import ROOT, TS_CLIENT, VAULT, call, content, listed, state, syncing

# The packages' own entry points, as a consumer imports them; it prints what test_sync_client reads.
NODE_SCRIPT = """\
import { VaultSync, bearer, clients } from "zkplatform-client";

const [baseUrl, token, vaultId] = process.argv.slice(2);
const stop = new AbortController();
process.on("SIGTERM", () => stop.abort());
const { vault } = clients(baseUrl, "connect-json");
const sync = new VaultSync(vault, {
  vaultId,
  headers: bearer(token).headers,
  signal: stop.signal,
  onEvent: (event) => {
    if (event.type !== "synced" && event.type !== "changes") return;
    const items = Object.fromEntries([...sync.liveItems()].map(([id, item]) => [id, item.version.toString()]));
    console.log(JSON.stringify({ event: "state", after: event.type, cursor: event.cursor.toString(), items }));
  },
});
await sync.run();
"""

# Type-checked against the package's declarations: a wrong use must not compile.
NODE_TYPES = """\
import { VaultSync, clients, type Item, type SyncEvent } from "zkplatform-client";
import type { ListChangesResponse } from "zkplatform-client/gen/zkplatform_api/platform/v1/vault_pb.js";

const { vault } = clients("http://127.0.0.1:1", "grpc");
const sync = new VaultSync(vault, { vaultId: "v", headers: (rpc) => ({ "x-rpc": rpc }), mode: "poll" });
export const live: Map<string, Item> = sync.liveItems();
export const cursorOf = (event: SyncEvent): bigint => event.cursor;
export const more = (page: ListChangesResponse): boolean => page.hasMore;
// @ts-expect-error: a sync needs the vault's id
new VaultSync(vault, { headers: {} });
"""


# Importable on its own: no server package, no grpcio stubs.
ALONE = """\
import importlib.util
import zkplatform_client
import zkplatform_api.platform.v1.vault_connect
assert importlib.util.find_spec("zkplatform") is None
assert importlib.util.find_spec("zkplatform_api.platform.v1.vault_pb2_grpc") is None
"""

TSCONFIG = {
    "compilerOptions": {
        "module": "NodeNext",
        "moduleResolution": "NodeNext",
        "target": "ES2022",
        "strict": True,
        "noEmit": True,
        "types": ["node"],
        "typeRoots": [str(TS_CLIENT / "node_modules" / "@types")],
    },
    "files": ["check.ts"],
}


@pytest.fixture(scope="module")
def packages(client_packages: Path) -> tuple[Path, Path]:
    """The wheel and the npm tarball, as `make clients` builds them."""
    (wheel,) = client_packages.glob("zkplatform_client-*.whl")
    (tarball,) = client_packages.glob("zkplatform-client-*.tgz")
    return wheel, tarball


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with serving(tmp_path_factory.mktemp("packages"), "--dev") as server:
        yield server


def tokens(server: Server) -> dict[str, str]:
    credentials = json.loads((server.log_path.parent / "var" / "dev-credentials.json").read_text())
    return {p["principalId"]: p["token"] for p in credentials["tenants"][0]["principals"]}


def run(command: list[str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    # Without the caller's PYTHONPATH: a source tree on it would show up in the fresh venv's packages.
    env = {name: value for name, value in os.environ.items() if name != "PYTHONPATH"}
    result = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert result.returncode == 0, f"{command}:\n{result.stdout}\n{result.stderr}"
    return result


def sync_sees_a_change(server: Server, command: list[str], item_id: str, cwd: Path) -> None:
    alice, bob = tokens(server)["alice"], tokens(server)["bob"]
    with syncing([*command, server.base_url, bob, VAULT], cwd=cwd) as sync:
        first = sync.expect(state(after="synced"))
        assert first["items"] == listed(server, bob)
        call(server, alice, "CreateItem", {"itemId": item_id, **content("1")})
        changed = sync.expect(state(after="changes", versions={item_id: "1"}))
        assert changed["items"] == listed(server, bob)
        assert sync.stop() == 0
    assert bob not in "".join(sync.stdout)


def test_the_wheel_in_a_fresh_venv(tmp_path: Path, packages: tuple[Path, Path], server: Server) -> None:
    wheel, _ = packages
    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    python = str(venv / "bin" / "python")
    # pip of the test's environment installs into the new venv (no ensurepip: faster), from its cache.
    run([
        sys.executable, "-m", "pip", "--python", python, "install", "--quiet", "--disable-pip-version-check",
        "-c", str(ROOT / "constraints.txt"), str(wheel),
    ])  # fmt: skip
    installed = run([
        sys.executable, "-m", "pip", "--python", python, "list", "--format", "json", "--disable-pip-version-check",
    ])  # fmt: skip
    names = {p["name"].lower() for p in json.loads(installed.stdout)}
    assert {"zkplatform-client", "connectrpc", "protobuf", "googleapis-common-protos"} <= names
    assert "zkplatform" not in names
    run([python, "-I", "-c", ALONE])

    sync_sees_a_change(server, [python, "-I", "-m", "zkplatform_client.example"], "pkg-python", tmp_path)


def test_the_npm_package_in_an_empty_project(tmp_path: Path, packages: tuple[Path, Path], server: Server) -> None:
    _, tarball = packages
    npm = shutil.which("npm")
    assert npm, "npm is needed: install Node 20"
    project = tmp_path / "consumer"
    project.mkdir()
    (project / "package.json").write_text(json.dumps({"name": "consumer", "private": True, "type": "module"}))
    run([npm, "install", "--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error", str(tarball)], project)
    installed = json.loads((project / "node_modules" / "zkplatform-client" / "package.json").read_text())
    assert installed["types"] == "./dist/index.d.ts"
    # The declarations: a consumer's TypeScript compiles against them, and a wrong use does not.
    (project / "check.ts").write_text(NODE_TYPES)
    (project / "tsconfig.json").write_text(json.dumps(TSCONFIG))
    run([str(TS_CLIENT / "node_modules" / ".bin" / "tsc"), "-p", "."], project)
    (project / "sync.mjs").write_text(NODE_SCRIPT)

    sync_sees_a_change(server, ["node", "sync.mjs"], "pkg-node", project)


def test_the_packages_leave_the_server_alone(packages: tuple[Path, Path]) -> None:
    """Nothing of the server's own code ships in either package."""
    wheel, tarball = packages
    listing = run([sys.executable, "-m", "zipfile", "-l", str(wheel)]).stdout
    assert "zkplatform_client/sync.py" in listing
    assert "zkplatform_api/platform/v1/vault_connect.py" in listing
    assert "zkplatform/" not in listing.replace("zkplatform_", "")
    assert "_grpc.py" not in listing
    files = run(["tar", "tzf", str(tarball)]).stdout.split()
    assert "package/dist/sync.d.ts" in files
    assert "package/dist/index.d.ts" in files
    assert not [f for f in files if f.startswith(("package/dist/demo", "package/dist/items", "package/src"))]
