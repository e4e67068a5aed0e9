"""A vault of large items read by grpcio with its default settings (a 4 MiB receive limit), over a
real server: 100 items of about 62 KB each, every one created under the 64 KiB body limit, would
make a default ListItems page of about 6.2 MB, which grpcio refuses (RESOURCE_EXHAUSTED:
"Received message larger than max"). Pages and stream messages stop at 3 MiB instead: the
default page, the changes and the watch's messages all arrive, and paging to the end returns
every item exactly once."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import grpc
import pytest

from tests.big_items import COUNT, ID_FORMAT, create_request
from tests.e2e.server import Server, serving
from zkplatform.domain.paging import PAGE_BYTES
from zkplatform_api.platform.v1 import vault_pb2, vault_pb2_grpc

VAULT = "acme-shared"  # alice and bob are members
SEEDED = [f"item-{n}" for n in range(1, 7)]
BIG = [ID_FORMAT.format(n) for n in range(COUNT)]
TIMEOUT = 30


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with serving(tmp_path_factory.mktemp("large-pages"), "--dev") as server:
        yield server


@pytest.fixture(scope="module")
def bob(server: Server) -> list[tuple[str, str]]:
    credentials: dict[str, Any] = json.loads((server.log_path.parent / "var" / "dev-credentials.json").read_text())
    token = next(p["token"] for t in credentials["tenants"] for p in t["principals"] if p["principalId"] == "bob")
    return [("authorization", f"Bearer {token}")]


@pytest.fixture(scope="module")
def stub(server: Server, bob: list[tuple[str, str]]) -> Iterator[vault_pb2_grpc.VaultServiceStub]:
    """grpcio as it comes: no channel option raises its 4 MiB receive limit. The vault is filled first."""
    with grpc.insecure_channel(server.base_url.removeprefix("http://")) as channel:
        stub = vault_pb2_grpc.VaultServiceStub(channel)
        for n in range(COUNT):
            request = create_request(VAULT, n)
            assert request.ByteSize() < 64 * 1024
            stub.CreateItem(request, metadata=bob, timeout=TIMEOUT)
        yield stub


def test_a_default_page_of_large_items_arrives_and_paging_ends_with_every_item_once(
    stub: vault_pb2_grpc.VaultServiceStub, bob: list[tuple[str, str]]
) -> None:
    pages: list[vault_pb2.ListItemsResponse] = []
    token = ""
    while True:
        page = stub.ListItems(
            vault_pb2.ListItemsRequest(vault_id=VAULT, page_token=token), metadata=bob, timeout=TIMEOUT
        )
        pages.append(page)
        if not (token := page.next_page_token):
            break
        assert len(pages) < 10

    assert len(pages[0].items) < 100  # cut by its bytes, not by the default page size
    assert max(page.ByteSize() for page in pages) <= PAGE_BYTES
    assert [item.item_id for page in pages for item in page.items] == BIG + SEEDED
    assert {(page.cursor.sequence, page.cursor.epoch) for page in pages} == {
        (pages[0].cursor.sequence, pages[0].cursor.epoch)
    }


def test_changes_of_large_items_arrive_page_by_page(
    stub: vault_pb2_grpc.VaultServiceStub, bob: list[tuple[str, str]]
) -> None:
    pages: list[vault_pb2.ListChangesResponse] = []
    cursor, epoch = 0, ""
    while True:
        request = vault_pb2.ListChangesRequest(vault_id=VAULT, since_sequence=cursor, since_epoch=epoch)
        page = stub.ListChanges(request, metadata=bob, timeout=TIMEOUT)
        pages.append(page)
        cursor, epoch = page.cursor.sequence, page.cursor.epoch
        if not page.has_more:
            break
        assert len(pages) < 10

    changes = [change for page in pages for change in page.changes]
    assert len(pages) >= 2
    assert [change.item.item_id for change in changes] == SEEDED + BIG
    assert [change.sequence for change in changes] == list(range(1, len(SEEDED) + COUNT + 1))


def test_a_watch_of_large_items_arrives_in_messages_of_at_most_3_mib(
    stub: vault_pb2_grpc.VaultServiceStub, bob: list[tuple[str, str]]
) -> None:
    stream = stub.WatchChanges(vault_pb2.WatchChangesRequest(vault_id=VAULT), metadata=bob, timeout=TIMEOUT)
    messages: list[vault_pb2.WatchChangesResponse] = []
    try:
        for message in stream:
            messages.append(message)
            if sum(len(m.changes) for m in messages) >= len(SEEDED) + COUNT:
                break
    finally:
        stream.cancel()

    assert len(messages) >= 2
    assert max(message.ByteSize() for message in messages) <= PAGE_BYTES
    assert [change.item.item_id for message in messages for change in message.changes] == SEEDED + BIG
