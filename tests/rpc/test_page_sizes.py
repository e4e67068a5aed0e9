"""A page size above the maximum is coerced down (AIP-158) on every list RPC, through the whole
app in process: ListItems, ListChanges, ListTokens and ListVaults answer a full page of 1000 and
go on, never INVALID_ARGUMENT (GetRecipientKeys and ListKeyLog: tests/rpc/test_directory.py). A
client built when the rule refused it sends whatever it likes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from google.protobuf.message import Message

from tests.actors import OPERATOR
from tests.connect import Codec, headers
from tests.unit.test_vault_items import content
from tests.world import FakeClock, World
from zkplatform.domain.models import Vault
from zkplatform_api.platform.v1 import broker_pb2, vault_pb2

MAXIMUM = 1000
ASKED = 2**31 - 1  # the largest int32 a client may send


@dataclass(frozen=True)
class Listing:
    path: str
    request: Message
    answer: type[Message]
    elements: str  # the answer's repeated field


LISTINGS = {
    "ListItems": Listing(
        "/platform.v1.VaultService/ListItems",
        vault_pb2.ListItemsRequest(vault_id="acme-shared", page_size=ASKED),
        vault_pb2.ListItemsResponse,
        "items",
    ),
    "ListChanges": Listing(
        "/platform.v1.VaultService/ListChanges",
        vault_pb2.ListChangesRequest(vault_id="acme-shared", page_size=ASKED),
        vault_pb2.ListChangesResponse,
        "changes",
    ),
    "ListTokens": Listing(
        "/platform.v1.BrokerService/ListTokens",
        broker_pb2.ListTokensRequest(page_size=ASKED),
        broker_pb2.ListTokensResponse,
        "tokens",
    ),
    "ListVaults": Listing(
        "/platform.v1.VaultService/ListVaults",
        vault_pb2.ListVaultsRequest(page_size=ASKED),
        vault_pb2.ListVaultsResponse,
        "vaults",
    ),
}


async def more_than_a_page(world: World, clock: FakeClock) -> None:
    """alice holds more of everything than a page takes: items (and their changes) in
    acme-shared, tokens, vaults."""
    items = [content(f"{n}").new_item(f"more-{n:04}", "acme", "acme-shared", clock.now) for n in range(MAXIMUM)]
    await world.platform.store.add_items(items, OPERATOR)
    alice = await world.platform.store.get_principal("alice")
    assert alice is not None
    for _ in range(MAXIMUM):
        await world.platform.issuer.issue(alice, 3600)
    for n in range(MAXIMUM):
        await world.platform.store.add_vault(Vault(f"acme-{n:04}", "acme", frozenset({"alice"})), OPERATOR)


@pytest.mark.parametrize("name", list(LISTINGS))
async def test_a_page_size_above_the_maximum_answers_a_page_of_the_maximum(
    client: httpx.AsyncClient, codec: Codec, world: World, clock: FakeClock, name: str
) -> None:
    listing = LISTINGS[name]
    await more_than_a_page(world, clock)

    response = await client.post(
        listing.path, content=codec.encode(listing.request), headers=headers(codec, world.token("alice"))
    )

    assert response.status_code == 200, response.text
    page: Any = codec.decode(response.content, listing.answer)
    assert len(getattr(page, listing.elements)) == MAXIMUM
    assert page.has_more if name == "ListChanges" else page.next_page_token  # and more follow
