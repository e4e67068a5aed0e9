"""The client packages as other teams get them (`make clients`): the wheel installed into a fresh
venv without the server, beside common packages, and at the lowest versions its ranges allow; the
npm tarball installed into an empty Node project with --engine-strict. Against real servers, each
syncs a vault, runs the examples docs/clients.md shows (clients/*/examples), and the checks of
tests/e2e/clients: token renewal, DPoP on every protocol by POST and GET, TLS with a private CA,
the error helpers; and the sync example resumes from its file through restarts and token renewals
without listing again, and lists again on CURSOR_EXPIRED."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import ssl
import subprocess
import sys
import time
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from packaging.version import Version

from tests.e2e.server import Server, free_port, serving, zkplatform_command
from tests.e2e.test_durable import ENV, seeded
from tests.e2e.test_sync_client import (
    ROOT,
    TS_CLIENT,
    VAULT,
    Event,
    age_tombstone,
    call,
    content,
    listed,
    state,
    syncing,
)
from zkplatform.domain.dpop import ProofRequest, verify_proof
from zkplatform.store.memory import MemoryStore

PY_EXAMPLES = ROOT / "clients" / "python" / "examples"
PY_TOOLS = ROOT / "clients" / "python" / "tools"
TS_EXAMPLES = TS_CLIENT / "examples"
CHECKS = Path(__file__).parent / "clients"
DOCS = ROOT / "docs" / "clients.md"
# Installed beside the wheel, at their newest: what a consumer's venv often holds already.
NEIGHBOURS = ("httpx", "requests", "grpcio")
# Tokens that live a second, minted as often as the checks need.
SERVER_ENV = {"ZKPLATFORM_TOKEN_TTL_MIN": "1", "ZKPLATFORM_MINT_RATE_PER_MINUTE": "1000"}
LANGUAGES = ("python", "node")
DPOP_URL = "http://127.0.0.1:8080/platform.v1.VaultService/DeleteItem"
DPOP_TOKEN = "zkp_" + "A" * 49  # a token's shape, not a token

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
import { VaultSync, VaultService, authInterceptor, clients } from "zkplatform-client";
import { createClient, createConnectTransport, type Interceptor, type Transport } from "zkplatform-client";
import type { Item, SyncEvent } from "zkplatform-client";
import type { ListChangesResponse } from "zkplatform-client/gen/zkplatform_api/platform/v1/vault_pb.js";

const { vault } = clients("http://127.0.0.1:1", "grpc", { token: async () => "t", interceptors: [] });
const sync = new VaultSync(vault, { vaultId: "v", headers: (rpc) => ({ "x-rpc": rpc }), mode: "poll" });
export const live: Map<string, Item> = sync.liveItems();
export const cursorOf = (event: SyncEvent): bigint => event.cursor;
export const more = (page: ListChangesResponse): boolean => page.hasMore;
// A transport of the consumer's own, from what the package re-exports.
const auth: Interceptor = authInterceptor("t", { httpGet: true });
const baseUrl = "http://127.0.0.1:1";
const own: Transport = createConnectTransport({ baseUrl, httpVersion: "2", useHttpGet: true, interceptors: [auth] });
export const client = createClient(VaultService, own);
// @ts-expect-error: a sync needs the vault's id
new VaultSync(vault, { headers: {} });
// @ts-expect-error: gRPC is HTTP/2 only, and the version is "1.1" or "2"
clients("http://127.0.0.1:1", "grpc", { httpVersion: "3" });
"""

# Importable on its own: no server package, no grpcio stubs.
ALONE = """\
import importlib.util
import zkplatform_client
import zkplatform_api.platform.v1.vault_connect
assert importlib.util.find_spec("zkplatform") is None
assert importlib.util.find_spec("zkplatform_api.platform.v1.vault_pb2_grpc") is None
"""

# Every committed sealed vector (clients/testdata/sealed-*.json) opened as it says, version 1's
# shape (plaintext or error) and version 2's (expect), against the vectors' directory (signers.json).
OPEN_VECTORS = """\
import base64, json, sys
from pathlib import Path
from google.protobuf import json_format
from zkplatform_api.platform.v1.vault_pb2 import Item
from zkplatform_client import RecipientPrivateKey, SealingError, open_item

class Device:
    def __init__(self, entry):
        self.principal_id, self.signing_jwk, self.live = entry["principalId"], entry["signingJwk"], entry["live"]

class Directory:
    def __init__(self, signers):
        self.devices = {s["deviceId"]: Device(s) for s in signers.values() if s["inDirectory"]}
    def device(self, device_id):
        return self.devices.get(device_id)

testdata = Path(sys.argv[1])
private = json.loads((testdata / "recipients.json").read_text())["keys"]
keys = {name: RecipientPrivateKey.from_jwk(jwk) for name, jwk in private.items()}
directory = Directory(json.loads((testdata / "signers.json").read_text())["signers"])
superseded = {"payload version 2": "MALFORMED"}  # version 1 vectors that version 2 reads otherwise
opened, wrong = 0, []
for path in sorted(testdata.glob("sealed-*.json")):
    for vector in json.loads(path.read_text())["vectors"]:
        item = json_format.ParseDict(vector["item"], Item())
        try:
            plaintext = open_item(item, keys[vector["recipient"]], directory).plaintext
            got = base64.urlsafe_b64encode(plaintext).rstrip(b"=").decode()
        except SealingError as error:
            got = error.reason
        opened += 1
        if "expect" in vector:
            expected = vector["expect"].get("plaintext", vector["expect"].get("reason"))
        else:
            expected = vector.get("plaintext", superseded.get(vector["name"], vector.get("error")))
        if got != expected:
            wrong.append(vector["name"])
print(json.dumps({"opened": opened, "wrong": wrong}))
"""

# A server certificate that is itself a CA (what `openssl req -x509` makes), trusted as such.
CA_AS_SERVER = """\
import asyncio, sys
from pathlib import Path
from connectrpc.errors import ConnectError
from zkplatform_api.platform.v1.vault_pb2 import ListItemsRequest
from zkplatform_client import clients

async def main(base_url: str, cert: str) -> None:
    async with clients(base_url, ca=Path(cert)) as platform:
        try:
            await platform.vault.list_items(ListItemsRequest(vault_id="v"))
        except ConnectError as error:
            print(error.code.value, error.message)

asyncio.run(main(*sys.argv[1:]))
"""


def documented_tsconfig() -> dict[str, Any]:
    """The compiler options the npm package's README gives its consumers (its one JSON block),
    with where this project's sources and output are."""
    (block,) = re.findall(r"```json\n(.*?)```", (TS_CLIENT / "README.md").read_text(), re.DOTALL)
    options = json.loads(block)["compilerOptions"]
    here = {"outDir": "out", "rootDir": ".", "typeRoots": [str(TS_CLIENT / "node_modules" / "@types")]}
    return {"compilerOptions": {**options, **here}, "include": ["*.ts"]}


@dataclass(frozen=True)
class Pki:
    ca: Path
    cert: Path
    key: Path


@pytest.fixture(scope="module")
def packages(client_packages: Path) -> tuple[Path, Path]:
    """The wheel and the npm tarball, as `make clients` builds them."""
    (wheel,) = client_packages.glob("zkplatform_client-*.whl")
    (tarball,) = client_packages.glob("zkplatform-client-*.tgz")
    return wheel, tarball


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with serving(tmp_path_factory.mktemp("packages"), "--dev", env=SERVER_ENV) as server:
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


def pip(python: str, *args: str) -> subprocess.CompletedProcess[str]:
    """pip of the test's environment acting on another venv (no ensurepip there: faster)."""
    return run([sys.executable, "-m", "pip", "--python", python, "--disable-pip-version-check", *args])


def new_venv(directory: Path, *requirements: str, constraints: Path | None = None) -> str:
    run([sys.executable, "-m", "venv", "--without-pip", str(directory)])
    python = str(directory / "bin" / "python")
    pip(python, "install", "--quiet", *(["-c", str(constraints)] if constraints else []), *requirements)
    return python


def installed(python: str) -> dict[str, str]:
    listing = pip(python, "list", "--format", "json").stdout
    return {p["name"].lower(): p["version"] for p in json.loads(listing)}


def lower_bounds(wheel: Path) -> dict[str, str]:
    """Each dependency of the wheel at the lowest version its range allows."""
    with zipfile.ZipFile(wheel) as archive:
        (metadata,) = [name for name in archive.namelist() if name.endswith(".dist-info/METADATA")]
        lines = archive.read(metadata).decode().splitlines()
    bounds = {}
    for line in lines:
        requirement = re.fullmatch(r"Requires-Dist: ([A-Za-z0-9_.-]+)\s*\(?([^;)]*)\)?", line)
        if requirement:
            (lowest,) = re.findall(r">=\s*([0-9][0-9A-Za-z.]*)", requirement.group(2))
            bounds[requirement.group(1).lower()] = lowest
    return bounds


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory, packages: tuple[Path, Path]) -> str:
    """The wheel in a fresh venv beside common packages, every dependency at its newest."""
    wheel, _ = packages
    python = new_venv(tmp_path_factory.mktemp("venv") / "venv", str(wheel), *NEIGHBOURS)
    pip(python, "check")  # every requirement of every package met
    return python


@pytest.fixture(scope="module")
def lowest_venv(tmp_path_factory: pytest.TempPathFactory, packages: tuple[Path, Path]) -> str:
    """The wheel in a fresh venv, every dependency at the lowest version its range allows."""
    wheel, _ = packages
    directory = tmp_path_factory.mktemp("lowest")
    constraints = directory / "lowest.txt"
    constraints.write_text("".join(f"{name}=={version}\n" for name, version in lower_bounds(wheel).items()))
    python = new_venv(directory / "venv", str(wheel), constraints=constraints)
    pip(python, "check")
    return python


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory, packages: tuple[Path, Path]) -> Path:
    """An empty Node project (an ES module one, as the package's README says) with the tarball
    installed (--engine-strict: every dependency runs on this Node), the examples and the auth
    checks compiled against its declarations into out/ with the README's compiler options."""
    _, tarball = packages
    npm = shutil.which("npm")
    assert npm, "npm is needed: install Node 20"
    project = tmp_path_factory.mktemp("consumer")
    (project / "package.json").write_text(json.dumps({"name": "consumer", "private": True, "type": "module"}))
    install = [npm, "install", "--engine-strict", "--prefer-offline", "--no-audit", "--no-fund", str(tarball)]
    run(install, project)
    for source in [*TS_EXAMPLES.glob("*.ts"), *CHECKS.glob("*.ts")]:
        shutil.copy(source, project / source.name)
    (project / "check.ts").write_text(NODE_TYPES)
    (project / "tsconfig.json").write_text(json.dumps(documented_tsconfig()))
    run([str(TS_CLIENT / "node_modules" / ".bin" / "tsc"), "-p", "."], project)
    return project


def make_pki(directory: Path) -> Pki:
    """The CA and server certificate docs/clients.md makes with openssl: the shell block after
    its `<!-- the test PKI -->` marker, run here as written."""
    text = DOCS.read_text()
    block = re.search(r"<!-- the test PKI -->\s*```sh\n(.*?)```", text, re.DOTALL)
    assert block, "docs/clients.md has no shell block after <!-- the test PKI -->"
    run(["bash", "-euo", "pipefail", "-c", block.group(1)], directory)
    return Pki(directory / "ca.pem", directory / "server.pem", directory / "server-key.pem")


@pytest.fixture(scope="module")
def tls_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, Pki]]:
    pki = make_pki(tmp_path_factory.mktemp("pki"))
    tls = ("--certfile", str(pki.cert), "--keyfile", str(pki.key))
    context = ssl.create_default_context(cafile=str(pki.ca))
    with serving(tmp_path_factory.mktemp("tls"), "--dev", *tls, tls=context) as server:
        yield server, pki


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


def example(language: str, name: str, venv: str, project: Path, *args: str) -> dict[str, Any]:
    """Run clients/python/examples/NAME.py in the venv, or clients/ts/examples/NAME.ts compiled in
    the project; its one line of JSON."""
    if language == "python":
        result = run([venv, "-I", str(PY_EXAMPLES / f"{name}.py"), *args])
    else:
        result = run(["node", str(project / "out" / f"{name}.js"), *args], project)
    assert result.stderr == ""
    assert not [arg for arg in args if arg.startswith("zkp_") and arg in result.stdout]  # no token printed
    report: dict[str, Any] = json.loads(result.stdout)
    return report


# The packages themselves


def test_the_wheel_in_a_fresh_venv(tmp_path: Path, venv: str, server: Server) -> None:
    names = installed(venv)

    assert {"zkplatform-client", "connectrpc", "protobuf", "googleapis-common-protos", *NEIGHBOURS} <= set(names)
    assert names["zkplatform-client"] == "1.2.0"
    assert "zkplatform" not in names
    run([venv, "-I", "-c", ALONE])
    sync_sees_a_change(server, [venv, "-I", str(PY_TOOLS / "sync_example.py")], "pkg-python", tmp_path)


def test_the_wheel_at_its_lowest_bounds(lowest_venv: str, packages: tuple[Path, Path], tmp_path: Path) -> None:
    wheel, _ = packages
    bounds = lower_bounds(wheel)
    names = installed(lowest_venv)

    assert set(bounds) == {"connectrpc", "cryptography", "googleapis-common-protos", "joserfc", "protobuf", "pyqwest"}
    assert {name: Version(names[name]) for name in bounds} == {name: Version(v) for name, v in bounds.items()}
    run([lowest_venv, "-I", "-c", ALONE])
    vectors = json.loads(run([lowest_venv, "-I", "-c", OPEN_VECTORS, str(ROOT / "clients" / "testdata")]).stdout)
    assert vectors["wrong"] == []
    assert vectors["opened"] >= 17 + 55  # sealed-python.json's and sealed-v2-python.json's at least
    for kind in ("ec", "ed25519"):  # the wheel's DPoP command, as docs/clients.md runs it
        command = [lowest_venv, "-I", "-m", "zkplatform_client.dpop_proof"]
        key = tmp_path / f"{kind}.json"
        thumbprint = run([*command, "new-key", str(key), "--kind", kind]).stdout.strip()
        proof = run([*command, "proof", str(key), DPOP_URL, DPOP_TOKEN]).stdout.strip()
        request = ProofRequest(proof=proof, htm="POST", htu=DPOP_URL)
        now = int(time.time())
        asyncio.run(
            verify_proof(request, key_thumbprint=thumbprint, access_token=DPOP_TOKEN, now=now, replay=MemoryStore())
        )


def test_the_npm_package_in_an_empty_project(project: Path, server: Server) -> None:
    manifest = json.loads((project / "node_modules" / "zkplatform-client" / "package.json").read_text())

    assert manifest["types"] == "./dist/index.d.ts"
    assert manifest["version"] == "1.2.0"
    assert "private" not in manifest  # publishable
    assert manifest["engines"] == {"node": ">=20.19.0"}
    # Direct dependencies: a consumer's own transport comes from the versions the package uses.
    assert {"@connectrpc/connect", "@connectrpc/connect-node", "@bufbuild/protobuf"} <= set(manifest["dependencies"])
    (project / "sync.mjs").write_text(NODE_SCRIPT)
    sync_sees_a_change(server, ["node", "sync.mjs"], "pkg-node", project)


def test_each_package_carries_its_readme(packages: tuple[Path, Path]) -> None:
    """The wheel's description (PyPI's page) is clients/python/README.md; the npm package has
    clients/ts/README.md (npm's page)."""
    wheel, tarball = packages
    with zipfile.ZipFile(wheel) as archive:
        (metadata,) = [name for name in archive.namelist() if name.endswith(".dist-info/METADATA")]
        headers, _, body = archive.read(metadata).decode().partition("\n\n")
    packed = run(["tar", "xzf", str(tarball), "-O", "package/README.md"]).stdout

    assert "Description-Content-Type: text/markdown" in headers.splitlines()
    assert body.strip() == (ROOT / "clients" / "python" / "README.md").read_text().strip()
    assert packed == (TS_CLIENT / "README.md").read_text()


def test_the_packages_leave_the_server_alone(packages: tuple[Path, Path]) -> None:
    """Nothing of the server's own code ships in either package."""
    wheel, tarball = packages
    listing = run([sys.executable, "-m", "zipfile", "-l", str(wheel)]).stdout
    assert "zkplatform_client/sync.py" in listing
    assert "zkplatform_client/auth.py" in listing
    assert "zkplatform_client/sealing.py" in listing
    assert "zkplatform_client/key_directory.py" in listing
    assert "zkplatform_api/platform/v1/vault_connect.py" in listing
    assert "zkplatform/" not in listing.replace("zkplatform_", "")
    assert "_grpc.py" not in listing
    assert "examples/" not in listing
    assert "tools/" not in listing
    assert "zkplatform_client/example.py" not in listing
    files = run(["tar", "tzf", str(tarball)]).stdout.split()
    assert {"package/dist/sync.d.ts", "package/dist/index.d.ts", "package/dist/auth.d.ts"} <= set(files)
    assert {"package/dist/sealing.d.ts", "package/dist/key-directory.d.ts"} <= set(files)
    # The package only: its manifest, its README and the compiled modules, none of clients/ts/tools.
    assert {f for f in files if not f.startswith("package/dist/")} == {"package/package.json", "package/README.md"}
    assert not [f for f in files if not f.endswith((".js", ".d.ts", ".json", ".md"))]
    tools = [path.stem for path in (TS_CLIENT / "tools").glob("*.ts")]
    assert len(tools) >= 4, "clients/ts/tools holds no tools: this test reads nothing"
    assert not [f for f in files if f.removeprefix("package/dist/").split(".")[0] in tools]


# The examples of docs/clients.md, in both languages


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_auth_example(language: str, venv: str, project: Path, server: Server) -> None:
    alice = tokens(server)["alice"]

    report = example(language, "auth", venv, project, server.base_url, alice)

    assert report == {"listed": len(listed(server, alice)), "read": "item-2"}


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_dpop_example(language: str, venv: str, project: Path, server: Server) -> None:
    alice = tokens(server)["alice"]

    report = example(language, "dpop", venv, project, server.base_url, alice, f"dpop-{language}")

    assert report == {"bound": True, "created": "1", "got": "1"}


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_interceptors_example(language: str, venv: str, project: Path, server: Server) -> None:
    report = example(language, "interceptors", venv, project, server.base_url, tokens(server)["alice"])

    not_found = "not_found" if language == "python" else "NotFound"
    assert report == {
        "calls": [
            {"rpc": "GetItem", "code": "ok", "sawToken": False},
            {"rpc": "GetItem", "code": not_found, "sawToken": False},
        ]
    }


@pytest.mark.parametrize("client", ["python", "python-lowest"])
def test_the_sealing_example(client: str, request: pytest.FixtureRequest, server: Server, tmp_path: Path) -> None:
    """At the newest dependencies and at the lowest bounds (joserfc's JWEs, cryptography's AES-GCM)."""
    python: str = request.getfixturevalue("lowest_venv" if client == "python-lowest" else "venv")
    alice, bob = tokens(server)["alice"], tokens(server)["bob"]
    credentials = server.log_path.parent / "var" / "dev-credentials.json"

    result = run([python, "-I", str(PY_EXAMPLES / "sealing.py"), str(credentials), f"sealed-{client}", str(tmp_path)])

    report = json.loads(result.stdout)
    assert report["opened"] == "the wifi password is hunter2"
    assert report["devices"]["alice"] == 1
    assert report["devices"]["bob"] >= 2  # his demo device and the laptop it endorsed (and earlier runs')
    # Shared with dave by an update of two fields (a FieldMask): version 2, and it opens for him.
    assert report["sharedWithDave"] == {"version": 2, "opened": "the wifi password is hunter2"}
    assert result.stderr == ""
    assert alice not in result.stdout
    assert bob not in result.stdout
    state = json.loads((tmp_path / "alice.json").read_text())
    assert (state["version"], state["tenantId"]) == (2, "acme")
    assert state["checkpoint"]["size"] >= 4  # the three demo devices and bob's laptop at least


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_tls_example(language: str, venv: str, project: Path, tls_server: tuple[Server, Pki]) -> None:
    server, pki = tls_server
    alice = tokens(server)["alice"]

    report = example(language, "tls", venv, project, server.base_url, alice, str(pki.ca))

    assert report == {"listed": {"grpc": 6, "connect-binary": 6}}


def test_the_python_client_refuses_a_ca_certificate_as_the_server_s(tmp_path: Path, venv: str) -> None:
    """What docs/clients.md warns of: `openssl req -x509` makes a CA certificate (CA:TRUE), which
    rustls will not take as a server's, even trusted."""
    run(
        [
            "openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", "key.pem", "-out", "cert.pem", "-days", "1", "-subj", "/CN=localhost",
            "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
        ],
        tmp_path,
    )  # fmt: skip
    tls = ("--certfile", str(tmp_path / "cert.pem"), "--keyfile", str(tmp_path / "key.pem"))
    context = ssl.create_default_context(cafile=str(tmp_path / "cert.pem"))  # OpenSSL takes it
    with serving(tmp_path, "--store", "memory:", *tls, tls=context) as server:
        refused = run([venv, "-I", "-c", CA_AS_SERVER, server.base_url, str(tmp_path / "cert.pem")]).stdout

    assert refused.startswith("unavailable ")
    assert "CaUsedAsEndEntity" in refused


# Token renewal and DPoP, in both languages


EXPECTED_CHECKS = {
    # Tokens of 2 s: the call that finds one expired asks for the next and is made again, once.
    "renewal": {"asked": 2, "failed": 0, "extraAttempts": 1, "unauthenticated": 1},
    # The new token has expired too: the call fails, and is not made a third time.
    "neverTwice": {"code": "unauthenticated", "asked": 2, "attempts": 2},
    # A fixed token cannot be renewed: not made again.
    "fixedExpired": {"code": "unauthenticated", "attempts": 1},
    # Any other refusal is the caller's.
    "otherErrors": {"code": "permission_denied", "asked": 1, "attempts": 1},
    # Five calls find the first token expired at once: the provider is asked once for them all.
    "concurrent": {"ok": 5, "asked": 2, "attempts": 10},
    # A stream is not made again; the next call carries the new token.
    "stream": {"code": "unauthenticated", "askedByStream": 2, "attempts": 1, "next": "ok", "askedAfter": 2},
    "dpop": {
        **{
            protocol: {"post": "ok", "get": "ok", "list": "ok", "watch": "ok"}
            for protocol in ("connect-json", "connect-binary", "grpc", "grpc-web")
        },
        "asBearer": "unauthenticated",
        "reloaded": True,
    },
    "provider": {"emptyToken": "refused"},
    "reasons": {
        "reason": True,
        "message": True,
        "otherReason": False,
        "otherDomain": False,
        "otherMessage": False,
        "otherCode": False,
    },
}


@pytest.mark.parametrize("client", ["python", "python-lowest", "node"])
def test_the_auth_interceptor(client: str, request: pytest.FixtureRequest, server: Server) -> None:
    alice = tokens(server)["alice"]
    if client == "node":
        project: Path = request.getfixturevalue("project")
        result = run(["node", str(project / "out" / "auth_checks.js"), server.base_url, alice], project)
    else:
        python: str = request.getfixturevalue("lowest_venv" if client == "python-lowest" else "venv")
        result = run([python, "-I", str(CHECKS / "auth_checks.py"), server.base_url, alice])

    assert json.loads(result.stdout) == EXPECTED_CHECKS
    assert result.stderr == ""
    assert alice not in server.log()


# Typed errors, in both languages


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_errors_example(language: str, venv: str, project: Path, server: Server) -> None:
    item_id = f"errors-{language}"

    report = example(language, "errors", venv, project, server.base_url, tokens(server)["alice"], item_id)

    codes = {"not_found": "NotFound", "aborted": "Aborted", "invalid_argument": "InvalidArgument"}
    code = (lambda name: name) if language == "python" else codes.get
    retry = "retryAfter" if language == "python" else "retryAfterMs"
    nothing: dict[str, Any] = {"metadata": {}, "violations": [], retry: None}
    assert report == {
        "notFound": {"code": code("not_found"), "reason": "ITEM_NOT_FOUND", **nothing},
        "conflictAt": 1,
        "conflict": {
            "code": code("aborted"),
            "reason": "VERSION_MISMATCH",
            **nothing,
            "metadata": {"currentVersion": "1"},
        },
        "invalid": {"code": code("invalid_argument"), "reason": "FIELD_INVALID", **nothing, "violations": ["pageSize"]},
        "denied": {
            "code": "permission_denied" if language == "python" else "PermissionDenied",
            "reason": "SCOPE_MISSING",
            **nothing,
            "metadata": {"requiredScope": "vault.items.delete"},
        },
    }


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_error_helpers(language: str, tmp_path: Path, venv: str, project: Path) -> None:
    """The refusals the example does not provoke: an expired token, the mint rate (RetryInfo), and
    a failure without the platform's ErrorInfo."""
    env = {"ZKPLATFORM_TOKEN_TTL_MIN": "1", "ZKPLATFORM_MINT_RATE_PER_MINUTE": "3"}
    with serving(tmp_path, "--dev", env=env) as server:
        alice = tokens(server)["alice"]
        if language == "python":
            result = run([venv, "-I", str(CHECKS / "error_checks.py"), server.base_url, alice])
        else:
            result = run(["node", str(project / "out" / "error_checks.js"), server.base_url, alice], project)

    assert result.stderr == ""
    report = json.loads(result.stdout)
    assert report == {
        "expired": {
            "code": "unauthenticated",
            "reason": "TOKEN_EXPIRED",
            "metadata": {},
            "violations": [],
            "retryAfter": False,
        },
        "expiredIs": True,
        "rateLimited": {
            "code": "resource_exhausted",
            "reason": "RATE_LIMIT_EXCEEDED",
            "metadata": {"limit": "3"},
            "violations": [],
            "retryAfter": True,
        },
        "network": {"code": "unavailable", "reason": None, "metadata": {}, "violations": [], "retryAfter": False},
    }
    assert alice not in result.stdout


# Sync from saved state, in both languages

LIST_ITEMS = "procedure=platform.v1.VaultService/ListItems "


def listings(directory: Path) -> int:
    """The ListItems calls the servers that ran in `directory` answered (their access logs)."""
    return sum(log.read_text(errors="replace").count(LIST_ITEMS) for log in directory.glob("server-*.log"))


def sync_command(language: str, venv: str, project: Path, *args: str) -> list[str]:
    if language == "python":
        return [venv, "-I", str(PY_EXAMPLES / "sync.py"), *args]
    return ["node", str(project / "out" / "sync.js"), *args]


def kind(name: str, reason: str | None = None) -> Any:
    return lambda e: e["event"] == name and (reason is None or e.get("reason") == reason)


def items_at(versions: dict[str, str]) -> Any:
    return lambda e: e["event"] == "changes" and all(e["items"].get(i) == v for i, v in versions.items())


@pytest.mark.parametrize("language", LANGUAGES)
def test_sync_resumes_from_its_file_after_a_restart(language: str, tmp_path: Path, venv: str, project: Path) -> None:
    """The client and the server both go down; changes made meanwhile arrive from the saved cursor
    when the client starts again from its file: no second listing."""
    url = f"sqlite:///{tmp_path}/zk.db"
    alice = seeded(url).token("alice")
    port = free_port()
    state_file = tmp_path / "replica.json"
    command = sync_command(language, venv, project, f"http://127.0.0.1:{port}", alice, VAULT, str(state_file))

    with serving(tmp_path, "--store", url, env=ENV, port=port) as server:
        with syncing(command, cwd=project) as sync:
            sync.expect(kind("synced"))
            call(server, alice, "CreateItem", {"itemId": "resume-1", **content("1")})
            sync.expect(items_at({"resume-1": "1"}))
        # The client is killed; its file holds what it had seen.
        saved = json.loads(state_file.read_text())
        call(server, alice, "UpdateItem", {"itemId": "resume-1", "baseVersion": "1", **content("2")})
    with serving(tmp_path, "--store", url, env=ENV, port=port) as server:  # the same SQLite file
        call(server, alice, "CreateItem", {"itemId": "resume-2", **content("1")})
        with syncing(command, cwd=project) as sync:
            resumed = sync.expect(kind("resumed"))
            caught = sync.expect(items_at({"resume-1": "2", "resume-2": "1"}))
            sync.close()
        assert listings(tmp_path) == 1
        assert caught["items"] == listed(server, alice)

    assert {i["itemId"]: i["version"] for i in saved["items"]}["resume-1"] == "1"
    assert resumed["cursor"] == saved["cursor"]
    assert resumed["items"] == {i["itemId"]: i["version"] for i in saved["items"] if not i.get("deleted")}
    assert not [e for e in sync.seen if e["event"] in {"synced", "restarting"}]
    assert alice not in state_file.read_text()


@pytest.mark.parametrize("language", LANGUAGES)
def test_sync_renews_an_expired_token_during_a_watch(language: str, tmp_path: Path, venv: str, project: Path) -> None:
    """Tokens of 2 s, re-checked every 1 s heartbeat: each watch ends TOKEN_EXPIRED, and the sync
    goes on from its cursor with a token the provider mints, without listing again."""
    env = {
        "ZKPLATFORM_TOKEN_TTL_MIN": "1",
        "ZKPLATFORM_MINT_RATE_PER_MINUTE": "1000",
        "ZKPLATFORM_WATCH_HEARTBEAT_SECONDS": "1",
    }
    state_file = tmp_path / "replica.json"
    with serving(tmp_path, "--dev", env=env) as server:
        alice = tokens(server)["alice"]
        command = sync_command(language, venv, project, server.base_url, alice, VAULT, str(state_file), "2")
        with syncing(command, cwd=project) as sync:
            sync.expect(kind("synced"))
            sync.expect(kind("reconnecting", "TOKEN_EXPIRED"))
            call(server, alice, "CreateItem", {"itemId": f"renewed-{language}", **content("1")})
            sync.expect(items_at({f"renewed-{language}": "1"}))
            sync.expect(kind("reconnecting", "TOKEN_EXPIRED"))  # and again, with the next token
            call(server, alice, "CreateItem", {"itemId": f"renewed-again-{language}", **content("1")})
            final = sync.expect(items_at({f"renewed-again-{language}": "1"}))
            sync.close()
        assert listings(tmp_path) == 1
        assert final["items"] == listed(server, alice)
        log = server.log()

    expired = [e for e in sync.seen if e["event"] == "reconnecting"]
    assert len(expired) >= 2
    assert {e["reason"] for e in expired} == {"TOKEN_EXPIRED"}
    assert log.count("procedure=platform.v1.BrokerService/MintUserApiToken ") >= 3
    assert not [e for e in sync.seen if e["event"] in {"restarting", "stopped"}]


def purge_tombstones(url: str) -> str:
    done = subprocess.run(
        [zkplatform_command(), "admin", "--store", url, "purge-tombstones", "--older-than-days", "1"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, **ENV},
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("language", LANGUAGES)
def test_sync_lists_again_once_on_cursor_expired(language: str, tmp_path: Path, venv: str, project: Path) -> None:
    """A delete the stopped client never saw is purged: from its file, CURSOR_EXPIRED, then exactly
    one new listing, without the item; then it follows the vault again."""
    url = f"sqlite:///{tmp_path}/zk.db"
    alice = seeded(url).token("alice")
    port = free_port()
    state_file = tmp_path / "replica.json"
    command = sync_command(language, venv, project, f"http://127.0.0.1:{port}", alice, VAULT, str(state_file))

    with serving(tmp_path, "--store", url, env=ENV, port=port) as server:
        with syncing(command, cwd=project) as sync:
            first = sync.expect(kind("synced"))
            sync.close()
        assert "item-2" in first["items"]
        call(server, alice, "DeleteItem", {"itemId": "item-2", "baseVersion": first["items"]["item-2"]})
    age_tombstone(tmp_path / "zk.db", "item-2", days=2)  # deleted past the retention (1 day here)
    assert "purged 1 " in purge_tombstones(url)
    with serving(tmp_path, "--store", url, env=ENV, port=port) as server:
        with syncing(command, cwd=project) as sync:
            sync.expect(kind("resumed"))
            sync.expect(kind("restarting", "CURSOR_EXPIRED"))
            relisted = sync.expect(kind("synced"))
            call(server, alice, "CreateItem", {"itemId": "after-purge", **content("1")})
            sync.expect(items_at({"after-purge": "1"}))
            sync.close()
        assert listings(tmp_path) == 2
        assert relisted["items"] == {k: v for k, v in listed(server, alice).items() if k != "after-purge"}

    assert "item-2" not in relisted["items"]
    assert [e["event"] for e in sync.seen].count("synced") == 1
    saved: list[Event] = json.loads(state_file.read_text())["items"]
    assert "item-2" not in {i["itemId"] for i in saved}
