"""The apps that do no call's work, the ceilings the real app is measured against.

- `raw_app`: reads the body and answers fixed bytes: the ceiling of the server.
- `noop_app()`: connectrpc's VaultService and BrokerService answering every unary call with a
  fixed message (bench/answers.py) with our codecs: the ceiling of the Connect runtime.
  WatchChanges, a stream, is left out.

Working tree's code only: bench/apps.py imports this module only for the app that puts the
fixed answers behind its checks, so that an older commit served beside (bench/other_commits.py)
never imports what it lacks.
"""

from __future__ import annotations

import functools
from typing import Any

from connectrpc.compat import google_protobuf_binary_codec
from connectrpc.request import RequestContext

from bench import answers
from zkplatform.asgi import ASGIApp, Message, Receive, Scope, Send
from zkplatform.rpc.encoding.codec import CompactJSONCodec
from zkplatform_api.platform.v1 import broker_pb2, vault_pb2
from zkplatform_api.platform.v1.broker_connect import BrokerService, BrokerServiceASGIApplication
from zkplatform_api.platform.v1.vault_connect import VaultService, VaultServiceASGIApplication


@functools.cache
def _raw_body() -> bytes:
    return CompactJSONCodec().encode(answers.DELETED)


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
    await send({"type": "http.response.body", "body": _raw_body()})


async def _lifespan(receive: Receive, send: Send) -> None:
    while (await receive())["type"] != "lifespan.shutdown":
        await send({"type": "lifespan.startup.complete"})
    await send({"type": "lifespan.shutdown.complete"})


class FixedVault(VaultService):
    async def delete_item(
        self, request: vault_pb2.DeleteItemRequest, ctx: RequestContext[Any, Any], /
    ) -> vault_pb2.DeleteItemResponse:
        return answers.DELETED

    async def create_item(
        self, request: vault_pb2.CreateItemRequest, ctx: RequestContext[Any, Any], /
    ) -> vault_pb2.CreateItemResponse:
        return answers.CREATED

    async def update_item(
        self, request: vault_pb2.UpdateItemRequest, ctx: RequestContext[Any, Any], /
    ) -> vault_pb2.UpdateItemResponse:
        return answers.UPDATED

    async def get_item(
        self, request: vault_pb2.GetItemRequest, ctx: RequestContext[Any, Any], /
    ) -> vault_pb2.GetItemResponse:
        return answers.GOT

    async def list_items(
        self, request: vault_pb2.ListItemsRequest, ctx: RequestContext[Any, Any], /
    ) -> vault_pb2.ListItemsResponse:
        return answers.LISTED

    async def list_changes(
        self, request: vault_pb2.ListChangesRequest, ctx: RequestContext[Any, Any], /
    ) -> vault_pb2.ListChangesResponse:
        return answers.CHANGES


class FixedBroker(BrokerService):
    async def mint_user_api_token(
        self, request: broker_pb2.MintUserApiTokenRequest, ctx: RequestContext[Any, Any], /
    ) -> broker_pb2.MintUserApiTokenResponse:
        return answers.MINTED

    async def list_tokens(
        self, request: broker_pb2.ListTokensRequest, ctx: RequestContext[Any, Any], /
    ) -> broker_pb2.ListTokensResponse:
        return answers.TOKENS

    async def revoke_token(
        self, request: broker_pb2.RevokeTokenRequest, ctx: RequestContext[Any, Any], /
    ) -> broker_pb2.RevokeTokenResponse:
        return answers.REVOKED


def noop_app() -> ASGIApp:
    codecs = [google_protobuf_binary_codec(), CompactJSONCodec()]
    vault = VaultServiceASGIApplication(FixedVault(), codecs=codecs)
    broker = BrokerServiceASGIApplication(FixedBroker(), codecs=codecs)

    async def route(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        app = broker if scope["path"].startswith("/platform.v1.BrokerService/") else vault
        await app(scope, receive, send)

    return route
