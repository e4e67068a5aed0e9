"""The floor of an open watch: connectrpc's WatchChanges under hypercorn, doing none of a watch's work.

    python -m hypercorn --bind 127.0.0.1:PORT --backlog 1024 'bench.noop_watches:app()'

bench/watches10k.py serves it as its `noop-h1` setup, measured as the platform is: each stream
sends the caught-up marker, then an empty message (a heartbeat) HEARTBEAT_S after its last one,
and every UpdateItem's change (UpdateItem and ListChanges answer just enough for the harness).
No authentication, no store, no re-check, none of the platform's front: what is left is
hypercorn, h11, connectrpc, the binary codec and one wait per stream, which a watch of the platform
pays as well, with the platform's garbage collector settings (`app.settle_heap`). Its memory and
idle CPU per watch are the least this stack allows.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from connectrpc.compat import google_protobuf_binary_codec
from connectrpc.request import RequestContext

from bench.noop import FixedVault, _lifespan
from zkplatform.app import settle_heap
from zkplatform.asgi import ASGIApp, Receive, Scope, Send
from zkplatform.rpc.encoding.codec import CompactJSONCodec
from zkplatform_api.platform.v1 import vault_pb2
from zkplatform_api.platform.v1.vault_connect import VaultServiceASGIApplication

HEARTBEAT_S = 15  # the platform's default period


class WatchedVault(FixedVault):
    """One vault whose UpdateItem makes a change that every open WatchChanges sends."""

    def __init__(self) -> None:
        self._sequence = 1
        self._item = vault_pb2.Item(item_id="b-0", vault_id="v-0", version=1, kind="note")
        self._waiting: set[asyncio.Future[vault_pb2.WatchChangesResponse]] = set()  # a future a waiting stream

    def _cursor(self) -> vault_pb2.Cursor:
        return vault_pb2.Cursor(vault_id="v-0", sequence=self._sequence)

    async def list_changes(
        self, request: vault_pb2.ListChangesRequest, ctx: RequestContext[Any, Any], /
    ) -> vault_pb2.ListChangesResponse:
        change = vault_pb2.ItemChange(item=self._item, sequence=self._sequence)
        return vault_pb2.ListChangesResponse(changes=[change], cursor=self._cursor())

    async def update_item(
        self, request: vault_pb2.UpdateItemRequest, ctx: RequestContext[Any, Any], /
    ) -> vault_pb2.UpdateItemResponse:
        self._sequence += 1
        self._item = vault_pb2.Item(item_id="b-0", vault_id="v-0", version=self._item.version + 1, kind="note")
        change = vault_pb2.ItemChange(item=self._item, sequence=self._sequence)
        message = vault_pb2.WatchChangesResponse(changes=[change], cursor=self._cursor())
        waiting, self._waiting = self._waiting, set()
        for waiter in waiting:
            waiter.set_result(message)
        return vault_pb2.UpdateItemResponse(item=self._item, cursor=self._cursor())

    async def watch_changes(
        self, request: vault_pb2.WatchChangesRequest, ctx: RequestContext[Any, Any], /
    ) -> AsyncIterator[vault_pb2.WatchChangesResponse]:
        yield vault_pb2.WatchChangesResponse(cursor=self._cursor(), caught_up=True)
        while True:
            waiter = asyncio.get_running_loop().create_future()
            self._waiting.add(waiter)
            try:
                async with asyncio.timeout(HEARTBEAT_S):
                    message = await waiter
            except TimeoutError:
                message = vault_pb2.WatchChangesResponse(cursor=self._cursor())
            finally:
                self._waiting.discard(waiter)
            yield message


def app() -> ASGIApp:
    vault = VaultServiceASGIApplication(WatchedVault(), codecs=[google_protobuf_binary_codec(), CompactJSONCodec()])

    async def route(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            settle_heap()  # the platform's collector settings, so that only the work differs
            await _lifespan(receive, send)
            return
        await vault(scope, receive, send)

    return route
