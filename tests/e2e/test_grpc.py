"""The same handlers over gRPC (HTTP/2 cleartext, prior knowledge), with a grpcio client."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import grpc
import pytest
from google.rpc import error_details_pb2, status_pb2

from tests.e2e.server import Server, serving
from zkplatform.domain import tokens
from zkplatform_api.platform.v1 import broker_pb2, broker_pb2_grpc, vault_pb2, vault_pb2_grpc


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with serving(tmp_path_factory.mktemp("grpc"), "--dev") as server:
        yield server


@pytest.fixture(scope="module")
def credentials(server: Server) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((server.log_path.parent / "var" / "dev-credentials.json").read_text())
    return data


@pytest.fixture(scope="module")
def channel(server: Server) -> Iterator[grpc.Channel]:
    with grpc.insecure_channel(server.base_url.removeprefix("http://")) as channel:
        yield channel


def token(credentials: dict[str, Any], principal_id: str) -> str:
    return str(
        next(p["token"] for t in credentials["tenants"] for p in t["principals"] if p["principalId"] == principal_id)
    )


def bearer(value: str) -> list[tuple[str, str]]:
    return [("authorization", f"Bearer {value}")]


def delete(vault_id: str, item_id: str, base_version: int) -> vault_pb2.DeleteItemRequest:
    return vault_pb2.DeleteItemRequest(vault_id=vault_id, item_id=item_id, base_version=base_version)


def test_delete_and_repeat(channel: grpc.Channel, credentials: dict[str, Any]) -> None:
    stub = vault_pb2_grpc.VaultServiceStub(channel)
    alice = bearer(token(credentials, "alice"))

    first = stub.DeleteItem(delete("acme-private", "item-1", 1), metadata=alice, timeout=10)
    repeat = stub.DeleteItem(delete("acme-private", "item-1", 9), metadata=alice, timeout=10)

    assert first.item.deleted
    assert first.item.version == 2
    assert not first.item.HasField("encrypted_payload")
    assert repeat == first


def test_version_conflict_carries_error_info_in_status_details(
    channel: grpc.Channel, credentials: dict[str, Any]
) -> None:
    stub = vault_pb2_grpc.VaultServiceStub(channel)

    with pytest.raises(grpc.RpcError) as raised:
        stub.DeleteItem(delete("acme-private", "item-2", 5), metadata=bearer(token(credentials, "alice")), timeout=10)

    error: Any = raised.value
    assert error.code() == grpc.StatusCode.ABORTED
    details = dict(error.trailing_metadata())["grpc-status-details-bin"]
    status = status_pb2.Status.FromString(details)
    assert status.code == grpc.StatusCode.ABORTED.value[0]
    info = error_details_pb2.ErrorInfo()
    assert status.details[0].Unpack(info)
    assert info.reason == "VERSION_MISMATCH"
    assert dict(info.metadata) == {"currentVersion": "1"}


def test_mint_then_use_the_minted_token(channel: grpc.Channel, credentials: dict[str, Any]) -> None:
    broker = broker_pb2_grpc.BrokerServiceStub(channel)
    vault = vault_pb2_grpc.VaultServiceStub(channel)

    minted = broker.MintUserApiToken(
        broker_pb2.MintUserApiTokenRequest(tenant_id="acme", requested_scopes=["vault.items.delete"]),
        metadata=bearer(token(credentials, "alice")),
        timeout=10,
    ).token
    deleted = vault.DeleteItem(delete("acme-shared", "item-1", 1), metadata=bearer(minted.access_token), timeout=10)

    assert tokens.is_well_formed(minted.access_token)
    assert list(minted.scopes) == ["vault.items.delete"]
    assert deleted.item.deleted


@pytest.mark.parametrize(
    ("metadata", "code"),
    [([], grpc.StatusCode.UNAUTHENTICATED), (bearer("zkp_" + "0" * 49), grpc.StatusCode.UNAUTHENTICATED)],
)
def test_refusals_keep_the_connection_usable(
    channel: grpc.Channel, credentials: dict[str, Any], metadata: list[tuple[str, str]], code: grpc.StatusCode
) -> None:
    stub = vault_pb2_grpc.VaultServiceStub(channel)

    with pytest.raises(grpc.RpcError) as raised:
        stub.DeleteItem(delete("acme-private", "item-3", 1), metadata=metadata, timeout=10)
    after = stub.DeleteItem(
        delete("acme-private", "item-3", 1), metadata=bearer(token(credentials, "alice")), timeout=10
    )

    error: Any = raised.value
    assert error.code() == code
    assert after.item.deleted


def test_malformed_request_is_invalid_argument_with_bad_request(
    channel: grpc.Channel, credentials: dict[str, Any]
) -> None:
    stub = vault_pb2_grpc.VaultServiceStub(channel)

    with pytest.raises(grpc.RpcError) as raised:
        stub.DeleteItem(delete("", "item-4", 0), metadata=bearer(token(credentials, "alice")), timeout=10)

    error: Any = raised.value
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    info, bad = error_info(error), error_details_pb2.BadRequest()
    assert details_of(error)[1].Unpack(bad)
    assert (info.domain, info.reason) == ("zkplatform.dev", "FIELD_INVALID")
    assert {v.field for v in bad.field_violations} == {"vaultId", "baseVersion"}


def details_of(error: Any) -> list[Any]:
    """The google.protobuf.Any details of a gRPC error's status."""
    status = status_pb2.Status.FromString(dict(error.trailing_metadata())["grpc-status-details-bin"])
    assert status.code == error.code().value[0]
    return list(status.details)


def error_info(error: Any) -> error_details_pb2.ErrorInfo:
    """The one ErrorInfo of a gRPC error's status details."""
    infos = [d for d in details_of(error) if d.Is(error_details_pb2.ErrorInfo.DESCRIPTOR)]
    assert len(infos) == 1, details_of(error)
    info = error_details_pb2.ErrorInfo()
    assert infos[0].Unpack(info)
    return info


@pytest.mark.parametrize(
    ("path", "request_bytes", "metadata", "code", "reason"),
    [
        (  # a domain error
            "/platform.v1.VaultService/GetItem",
            vault_pb2.GetItemRequest(vault_id="acme-private", item_id="no-such-item").SerializeToString(),
            "alice",
            grpc.StatusCode.NOT_FOUND,
            "ITEM_NOT_FOUND",
        ),
        ("/platform.v1.VaultService/GetItem", b"", None, grpc.StatusCode.UNAUTHENTICATED, "TOKEN_MISSING"),
        (  # connectrpc's own refusal
            "/platform.v1.VaultService/GetItem",
            b"\xff\xfe\xfd",
            "alice",
            grpc.StatusCode.INVALID_ARGUMENT,
            "REQUEST_MALFORMED",
        ),
        ("/platform.v1.VaultService/NoSuchMethod", b"", None, grpc.StatusCode.UNIMPLEMENTED, "PROCEDURE_NOT_FOUND"),
        (  # the front's own refusal (a token in the URL cannot be sent by grpcio)
            "/grpc.health.v1.Health/Check",
            b"\x0a\x04nope",
            None,
            grpc.StatusCode.NOT_FOUND,
            "SERVICE_NOT_FOUND",
        ),
    ],
)
def test_every_error_carries_its_error_info_in_the_status_details(
    channel: grpc.Channel,
    credentials: dict[str, Any],
    path: str,
    request_bytes: bytes,
    metadata: str | None,
    code: grpc.StatusCode,
    reason: str,
) -> None:
    """As in the in-process table (tests/rpc/test_error_table.py), over gRPC on HTTP/2."""
    call = channel.unary_unary(path, request_serializer=lambda raw: raw, response_deserializer=lambda raw: raw)

    with pytest.raises(grpc.RpcError) as raised:
        call(request_bytes, metadata=tuple(bearer(token(credentials, metadata)) if metadata else ()), timeout=10)

    error: Any = raised.value
    assert error.code() == code
    info = error_info(error)
    assert (info.domain, info.reason) == ("zkplatform.dev", reason)
    detail_types = sorted(d.type_url.rpartition("/")[2] for d in details_of(error))
    bad_request = ["google.rpc.BadRequest"] if code == grpc.StatusCode.INVALID_ARGUMENT else []
    assert detail_types == sorted(["google.rpc.ErrorInfo", *bad_request])
