"""DirectoryService over gRPC (HTTP/2 cleartext, prior knowledge) with a grpcio client, on a
real `serve --dev`: a device endorsed by bob's demo device is found by alice, every answer's
checkpoint opens with the keys the credentials file gives a client (the development log key
and witness), and the refusals carry their ErrorInfo in the status details."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import grpc
import pytest
from google.rpc import error_details_pb2, status_pb2

from tests.e2e.server import Server, serving
from tests.rpc.devices import TestDevice, Trust
from zkplatform_api.platform.v1 import directory_pb2, directory_pb2_grpc
from zkplatform_tlog.note import CosignatureVerifier, NoteVerifier


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


@pytest.fixture(scope="module")
def trust(credentials: dict[str, Any]) -> Trust:
    """What the credentials file gives a client to pin."""
    return Trust(
        [NoteVerifier.from_vkey(vkey) for vkey in credentials["logKeys"]],
        [CosignatureVerifier.from_vkey(vkey) for vkey in credentials["witnesses"]],
        credentials["witnessQuorum"],
    )


def principal(credentials: dict[str, Any], principal_id: str) -> dict[str, Any]:
    found: dict[str, Any] = next(
        p for t in credentials["tenants"] for p in t["principals"] if p["principalId"] == principal_id
    )
    return found


def bearer(credentials: dict[str, Any], principal_id: str) -> list[tuple[str, str]]:
    return [("authorization", f"Bearer {principal(credentials, principal_id)['token']}")]


def whole_log(stub: directory_pb2_grpc.DirectoryServiceStub, metadata: list[tuple[str, str]]) -> list[bytes]:
    entries: list[bytes] = []
    page_token = ""
    while True:
        page = stub.ListKeyLog(directory_pb2.ListKeyLogRequest(page_token=page_token), metadata=metadata, timeout=10)
        entries += [entry.data.encode() for entry in page.entries]
        if not (page_token := page.next_page_token):
            return entries


def test_the_credentials_pin_the_development_log_and_witness(credentials: dict[str, Any]) -> None:
    assert [NoteVerifier.from_vkey(vkey).name for vkey in credentials["logKeys"]] == ["zkplatform.dev"]
    assert [CosignatureVerifier.from_vkey(vkey).name for vkey in credentials["witnesses"]] == ["witness.zkplatform.dev"]
    assert credentials["witnessQuorum"] == 1
    bob = principal(credentials, "bob")
    assert TestDevice.of_demo(bob).device_id == bob["deviceId"]


def test_a_device_endorsed_by_the_demo_device_is_found_by_another_principal(
    stub: directory_pb2_grpc.DirectoryServiceStub, credentials: dict[str, Any], trust: Trust
) -> None:
    demo, laptop = TestDevice.of_demo(principal(credentials, "bob")), TestDevice()

    published = stub.PublishDevice(
        laptop.publish("bob", int(time.time()), endorser=demo), metadata=bearer(credentials, "bob"), timeout=10
    )
    found = stub.GetRecipientKeys(
        directory_pb2.GetRecipientKeysRequest(principal_ids=["bob"]), metadata=bearer(credentials, "alice"), timeout=10
    )

    assert (published.device.device_id, published.device.endorser_device_id) == (laptop.device_id, demo.device_id)
    assert [d.device_id for d in found.devices] == [demo.device_id, laptop.device_id]
    log = whole_log(stub, bearer(credentials, "alice"))
    checkpoint = trust.open(found.checkpoint.note, "acme", log)  # cosigned by the development witness
    assert checkpoint.size == published.entry.index + 1 == len(log)
    assert trust.open(published.checkpoint.note, "acme", log).size == checkpoint.size


def test_an_unknown_device_is_not_found_with_its_reason(
    stub: directory_pb2_grpc.DirectoryServiceStub, credentials: dict[str, Any]
) -> None:
    demo = TestDevice.of_demo(principal(credentials, "alice"))

    with pytest.raises(grpc.RpcError) as raised:
        stub.RevokeDevice(
            demo.revoke(TestDevice(), "alice", int(time.time())), metadata=bearer(credentials, "alice"), timeout=10
        )

    error: Any = raised.value
    assert error.code() == grpc.StatusCode.NOT_FOUND
    status = status_pb2.Status.FromString(dict(error.trailing_metadata())["grpc-status-details-bin"])
    info = error_details_pb2.ErrorInfo()
    assert status.details[0].Unpack(info)
    assert info.reason == "KEY_NOT_FOUND"
