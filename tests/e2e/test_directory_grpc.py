"""DirectoryService over gRPC (HTTP/2 cleartext, prior knowledge) with a grpcio client, on a
real server: a key published by one principal is found by another, and the refusals carry
their ErrorInfo in the status details."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import grpc
import pytest
from google.rpc import error_details_pb2, status_pb2
from joserfc import jwk

from tests.e2e.server import Server, serving
from zkplatform_api.platform.v1 import directory_pb2, directory_pb2_grpc


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with serving(tmp_path_factory.mktemp("directory-grpc"), "--dev") as server:
        yield server


@pytest.fixture(scope="module")
def credentials(server: Server) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((server.log_path.parent / "var" / "dev-credentials.json").read_text())
    return data


@pytest.fixture(scope="module")
def stub(server: Server) -> Iterator[directory_pb2_grpc.DirectoryServiceStub]:
    with grpc.insecure_channel(server.base_url.removeprefix("http://")) as channel:
        yield directory_pb2_grpc.DirectoryServiceStub(channel)


def token(credentials: dict[str, Any], principal_id: str) -> str:
    return str(
        next(p["token"] for t in credentials["tenants"] for p in t["principals"] if p["principalId"] == principal_id)
    )


def dev_key_id(credentials: dict[str, Any], principal_id: str) -> str:
    """The id of the principal's key in the development data set, published at start-up."""
    return str(
        next(p["keyId"] for t in credentials["tenants"] for p in t["principals"] if p["principalId"] == principal_id)
    )


def bearer(value: str) -> list[tuple[str, str]]:
    return [("authorization", f"Bearer {value}")]


def test_a_published_key_is_found_by_another_principal(
    stub: directory_pb2_grpc.DirectoryServiceStub, credentials: dict[str, Any]
) -> None:
    key = jwk.OKPKey.generate_key("X25519")
    request = directory_pb2.PublishKeyRequest(public_key_jwk=json.dumps(key.as_dict(private=False)))

    published = stub.PublishKey(request, metadata=bearer(token(credentials, "bob")), timeout=10)
    found = stub.GetRecipientKeys(
        directory_pb2.GetRecipientKeysRequest(principal_ids=["bob"]),
        metadata=bearer(token(credentials, "alice")),
        timeout=10,
    )

    assert published.key.key_id == key.thumbprint()
    # with bob's development key (the two may be of one second: then in key id order)
    assert sorted(k.key_id for k in found.keys) == sorted([dev_key_id(credentials, "bob"), published.key.key_id])
    assert published.key in found.keys
    assert found.log_head == published.log_head


def test_an_unknown_key_is_not_found_with_its_reason(
    stub: directory_pb2_grpc.DirectoryServiceStub, credentials: dict[str, Any]
) -> None:
    with pytest.raises(grpc.RpcError) as raised:
        stub.RevokeKey(
            directory_pb2.RevokeKeyRequest(key_id="A" * 43), metadata=bearer(token(credentials, "alice")), timeout=10
        )

    error: Any = raised.value
    assert error.code() == grpc.StatusCode.NOT_FOUND
    status = status_pb2.Status.FromString(dict(error.trailing_metadata())["grpc-status-details-bin"])
    info = error_details_pb2.ErrorInfo()
    assert status.details[0].Unpack(info)
    assert info.reason == "KEY_NOT_FOUND"
