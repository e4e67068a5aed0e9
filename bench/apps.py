"""The ASGI applications `make bench` serves, each on the same hypercorn settings.

- `raw_app`: reads the body and answers fixed bytes: the ceiling of hypercorn.
- `noop_app()`: a Connect VaultService that answers a fixed tombstone: the
  ceiling of connectrpc with our codecs.
- `platform_app()`: the real application on the memory store, seeded with a
  vault of BENCH_ITEMS items and a token written to BENCH_TOKEN_FILE.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from connectrpc.compat import google_protobuf_binary_codec
from connectrpc.request import RequestContext

from zkplatform.app import Platform, create_app
from zkplatform.config import Settings
from zkplatform.domain.models import EncryptedPayload, Item, Principal, Role, Tenant, Tombstone, Vault, WrappedKey
from zkplatform.rpc.codec import CompactJSONCodec
from zkplatform.rpc.convert import delete_response
from zkplatform.rpc.edge import Edge, Message, Receive, Scope, Send
from zkplatform.store.memory import MemoryStore
from zkplatform_api.platform.v1 import vault_pb2
from zkplatform_api.platform.v1.vault_connect import VaultService, VaultServiceASGIApplication

VAULT = "bench"
_NOW = 1_800_000_000


def bench_item(number: int) -> Item:
    return Item(
        item_id=f"b-{number}",
        tenant_id="bench",
        vault_id=VAULT,
        version=1,
        kind="note",
        title_hash="dGl0bGU",
        updated_at=_NOW,
        payload=EncryptedPayload("A256GCM", "bm9uY2Vub25jZQ", "", "Y2lwaGVydGV4dC1jaXBoZXJ0ZXh0", 1),
        wrapped_keys=(WrappedKey("owner", "A256KW", "a2V5LWtleS1rZXk"), WrappedKey("owner", "A256KW", "a2V5Mg")),
    )


_FIXED = delete_response(Tombstone(bench_item(1).tombstone(_NOW), 2))
_RAW_BODY = CompactJSONCodec().encode(_FIXED)


async def raw_app(scope: Scope, receive: Receive, send: Send) -> None:
    if scope["type"] != "http":
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
        return
    more = True
    while more:
        message: Message = await receive()
        more = message.get("more_body", False)
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": _RAW_BODY})


async def _lifespan(receive: Receive, send: Send) -> None:
    while (await receive())["type"] != "lifespan.shutdown":
        await send({"type": "lifespan.startup.complete"})
    await send({"type": "lifespan.shutdown.complete"})


class _Fixed(VaultService):
    async def delete_item(
        self, request: vault_pb2.DeleteItemRequest, ctx: RequestContext[Any, Any], /
    ) -> vault_pb2.DeleteItemResponse:
        return _FIXED


def noop_app() -> VaultServiceASGIApplication:
    return VaultServiceASGIApplication(_Fixed(), codecs=[google_protobuf_binary_codec(), CompactJSONCodec()])


def platform_app() -> Edge:
    store = MemoryStore()
    platform = Platform.build(store, b"bench-pepper-of-thirty-two-bytes")
    secret = asyncio.run(_seed(platform, int(os.environ.get("BENCH_ITEMS", "100000"))))
    Path(os.environ["BENCH_TOKEN_FILE"]).write_text(secret)
    return create_app(Settings(store_url="memory:"), platform=platform)


async def _seed(platform: Platform, items: int) -> str:
    store = platform.store
    await store.add_tenant(Tenant("bench"))
    owner = Principal("owner", "bench", Role.OWNER, Role.OWNER.default_scopes)
    await store.add_principal(owner)
    await store.add_vault(Vault(VAULT, "bench", frozenset({"owner"})))
    await store.add_items([bench_item(n) for n in range(1, items + 1)])
    return (await platform.issuer.issue(owner, 24 * 3600)).secret
