"""`buf curl` against a real server: with the local schema, and through server reflection."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from google.rpc import error_details_pb2

from tests.e2e.server import Server, serving

REPO = Path(__file__).resolve().parents[2]
BUF = str(Path(sys.executable).parent / "buf")
# Each delete takes a fresh item of alice's vaults (the module shares one server).
_fresh_items = iter([(vault, f"item-{n}") for vault in ("acme-private", "acme-shared") for n in range(1, 7)])


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with serving(tmp_path_factory.mktemp("bufcurl"), "--dev") as server:
        yield server


@pytest.fixture(scope="module")
def alice(server: Server) -> str:
    credentials = json.loads((server.log_path.parent / "var" / "dev-credentials.json").read_text())
    return str(next(p["token"] for p in credentials["tenants"][0]["principals"] if p["principalId"] == "alice"))


def buf_curl(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [BUF, "curl", "--http2-prior-knowledge", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=REPO,
    )


@pytest.mark.parametrize("protocol", ["connect", "grpc", "grpcweb"])
@pytest.mark.parametrize("schema", [["--schema", "."], []], ids=["local-schema", "reflection"])
def test_delete_with_buf_curl(server: Server, alice: str, protocol: str, schema: list[str]) -> None:
    vault, item = next(_fresh_items)

    result = buf_curl(
        *schema,
        "--protocol",
        protocol,
        "-H",
        f"Authorization: Bearer {alice}",
        "-d",
        json.dumps({"vaultId": vault, "itemId": item, "baseVersion": "1"}),
        f"{server.base_url}/platform.v1.VaultService/DeleteItem",
    )

    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    assert answer["item"]["deleted"] is True
    assert answer["item"]["itemId"] == item


def test_reflection_lists_the_services(server: Server) -> None:
    result = buf_curl("--protocol", "grpc", "--list-services", server.base_url)

    assert result.returncode == 0, result.stderr
    assert set(result.stdout.split()) == {
        "platform.v1.VaultService",
        "platform.v1.BrokerService",
        "platform.v1.DirectoryService",
        "grpc.reflection.v1.ServerReflection",
        "grpc.reflection.v1alpha.ServerReflection",
        "grpc.health.v1.Health",
    }


def test_errors_come_back_as_connect_errors(server: Server, alice: str) -> None:
    result = buf_curl(
        "--protocol",
        "grpc",
        "-H",
        f"Authorization: Bearer {alice}",
        "-d",
        '{"vaultId": "acme-private", "itemId": "nope", "baseVersion": "1"}',
        f"{server.base_url}/platform.v1.VaultService/DeleteItem",
    )

    assert result.returncode != 0
    assert "not_found" in result.stderr


@pytest.mark.parametrize(
    "service", ["", "platform.v1.VaultService", "platform.v1.BrokerService", "platform.v1.DirectoryService"]
)
def test_health_check_needs_no_token(server: Server, service: str) -> None:
    result = buf_curl(
        "--protocol", "grpc", "-d", json.dumps({"service": service}), f"{server.base_url}/grpc.health.v1.Health/Check"
    )

    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"status": "SERVING"}


def test_health_of_an_unknown_service_is_not_found(server: Server) -> None:
    result = buf_curl(
        "--protocol", "connect", "-d", '{"service": "x.Y"}', f"{server.base_url}/grpc.health.v1.Health/Check"
    )

    assert result.returncode != 0
    assert "not_found" in result.stderr


def test_health_list_and_watch(server: Server) -> None:
    listed = buf_curl("--protocol", "grpc", "-d", "{}", f"{server.base_url}/grpc.health.v1.Health/List")
    # Watch streams the status, then stays open until the client leaves: here, at buf's timeout.
    watched = buf_curl(
        "--protocol", "grpc", "--timeout", "1s", "-d", "{}", f"{server.base_url}/grpc.health.v1.Health/Watch"
    )

    assert json.loads(listed.stdout)["statuses"] == {
        "platform.v1.BrokerService": {"status": "SERVING"},
        "platform.v1.DirectoryService": {"status": "SERVING"},
        "platform.v1.VaultService": {"status": "SERVING"},
    }
    assert json.loads(watched.stdout) == {"status": "SERVING"}
    assert "deadline_exceeded" in watched.stderr


ITEM_CONTENT = {
    "kind": "login",
    "encryptedPayload": {"alg": "A256GCM", "nonce": "bm9uY2U", "ciphertext": "c2VjcmV0"},
    "wrappedKeys": [{"recipientId": "alice", "wrapAlg": "A256KW", "wrappedKey": "a2V5"}],
}


@pytest.mark.parametrize("protocol", ["connect", "grpc", "grpcweb"])
@pytest.mark.parametrize("schema", [["--schema", "."], []], ids=["local-schema", "reflection"])
def test_item_rpcs_with_buf_curl(server: Server, alice: str, protocol: str, schema: list[str]) -> None:
    item = f"buf-{protocol}-{len(schema)}"
    service = f"{server.base_url}/platform.v1.VaultService"

    def call(method: str, message: dict[str, object]) -> dict[str, Any]:
        result = buf_curl(
            *schema,
            "--protocol",
            protocol,
            "-H",
            f"Authorization: Bearer {alice}",
            "-d",
            json.dumps(message),
            f"{service}/{method}",
        )
        assert result.returncode == 0, result.stderr
        answer: dict[str, Any] = json.loads(result.stdout)
        return answer

    created = call("CreateItem", {"vaultId": "acme-shared", "itemId": item, **ITEM_CONTENT})
    updated = call("UpdateItem", {"vaultId": "acme-shared", "itemId": item, "baseVersion": "1", **ITEM_CONTENT})
    got = call("GetItem", {"vaultId": "acme-shared", "itemId": item})
    listed = call("ListItems", {"vaultId": "acme-shared", "pageSize": 1000})

    assert created["item"]["version"] == "1"
    assert updated["item"]["version"] == "2"
    assert got["item"] == updated["item"]
    assert item in [i["itemId"] for i in listed["items"]]


def test_item_already_exists_with_buf_curl(server: Server, alice: str) -> None:
    def create(kind: str) -> subprocess.CompletedProcess[str]:
        return buf_curl(
            "--protocol",
            "grpc",
            "-H",
            f"Authorization: Bearer {alice}",
            "-d",
            json.dumps({"vaultId": "acme-shared", "itemId": "buf-exists", **ITEM_CONTENT, "kind": kind}),
            f"{server.base_url}/platform.v1.VaultService/CreateItem",
        )

    first, other = create("login"), create("note")

    assert first.returncode == 0, first.stderr
    assert other.returncode != 0
    error = json.loads(other.stderr)
    assert error["code"] == "already_exists"
    (detail,) = error["details"]
    info = error_details_pb2.ErrorInfo.FromString(base64.b64decode(detail["value"] + "=" * (-len(detail["value"]) % 4)))
    assert (detail["type"], info.reason, dict(info.metadata)) == (
        "google.rpc.ErrorInfo",
        "ITEM_EXISTS",
        {"currentVersion": "1"},
    )
