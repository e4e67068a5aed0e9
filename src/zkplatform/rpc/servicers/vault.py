"""VaultService: protobuf <-> the vault use cases."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import Any

from connectrpc.request import RequestContext

from zkplatform.domain.sync import SyncUseCases
from zkplatform.domain.vault import VaultUseCases
from zkplatform.messages.convert import (
    WatchMessages,
    change_response,
    changes_response,
    get_response,
    item_content,
    item_patch,
    list_response,
    vault_response,
    vaults_response,
)
from zkplatform.messages.request_ids import request_id_of
from zkplatform.rpc.call_auth import call_auth
from zkplatform_api.platform.v1 import vault_pb2
from zkplatform_api.platform.v1.vault_connect import VaultService


def _no_store(ctx: RequestContext[Any, Any]) -> None:
    """Item content and memberships must never sit in a cache (a browser's, a proxy's): the
    reads may be called with GET, and an answer of any method is marked so.
    Set before the use case runs, so that its refusals (a 404 is cacheable by
    default) carry it too."""
    ctx.response_headers["cache-control"] = "no-store"


class VaultServicer(VaultService):
    def __init__(self, use_cases: VaultUseCases, sync: SyncUseCases, tombstone_retention_seconds: int) -> None:
        self._use_cases = use_cases
        self._sync = sync
        # What a tombstone's purge_time adds to its deletion: the retention the server purges with.
        self._retention = tombstone_retention_seconds
        self._watch_messages = WatchMessages(tombstone_retention_seconds)

    async def delete_item(
        self, request: vault_pb2.DeleteItemRequest, ctx: RequestContext[Any, Any], /
    ) -> vault_pb2.DeleteItemResponse:
        _no_store(ctx)
        tombstone = await self._use_cases.delete_item(
            call_auth(ctx).caller,
            request.vault_id,
            request.item_id,
            request.base_version,
            request=request_id_of(request),
        )
        epoch = await self._use_cases.epoch()
        return change_response(tombstone, epoch, vault_pb2.DeleteItemResponse(), retention=self._retention)

    async def create_item(
        self, request: vault_pb2.CreateItemRequest, ctx: RequestContext[Any, Any], /
    ) -> vault_pb2.CreateItemResponse:
        _no_store(ctx)
        created = await self._use_cases.create_item(
            call_auth(ctx).caller,
            request.vault_id,
            request.item_id,
            item_content(request),
            request=request_id_of(request),
        )
        epoch = await self._use_cases.epoch()
        return change_response(created, epoch, vault_pb2.CreateItemResponse(), retention=self._retention)

    async def update_item(
        self, request: vault_pb2.UpdateItemRequest, ctx: RequestContext[Any, Any], /
    ) -> vault_pb2.UpdateItemResponse:
        _no_store(ctx)
        updated = await self._use_cases.update_item(
            call_auth(ctx).caller,
            request.vault_id,
            request.item_id,
            request.base_version,
            item_patch(request),
            request=request_id_of(request),
        )
        epoch = await self._use_cases.epoch()
        return change_response(updated, epoch, vault_pb2.UpdateItemResponse(), retention=self._retention)

    async def get_item(
        self, request: vault_pb2.GetItemRequest, ctx: RequestContext[Any, Any], /
    ) -> vault_pb2.GetItemResponse:
        _no_store(ctx)
        item = await self._use_cases.get_item(call_auth(ctx).caller, request.vault_id, request.item_id)
        return get_response(item, retention=self._retention)

    async def list_items(
        self, request: vault_pb2.ListItemsRequest, ctx: RequestContext[Any, Any], /
    ) -> vault_pb2.ListItemsResponse:
        _no_store(ctx)
        listed = await self._use_cases.list_items(
            call_auth(ctx).caller, request.vault_id, request.page_size, request.page_token, request.show_deleted
        )
        return list_response(request.vault_id, listed, retention=self._retention)

    async def list_changes(
        self, request: vault_pb2.ListChangesRequest, ctx: RequestContext[Any, Any], /
    ) -> vault_pb2.ListChangesResponse:
        _no_store(ctx)
        listed = await self._sync.list_changes(
            call_auth(ctx).caller, request.vault_id, request.since_sequence, request.page_size, request.since_epoch
        )
        return changes_response(request.vault_id, listed, retention=self._retention)

    async def watch_changes(
        self, request: vault_pb2.WatchChangesRequest, ctx: RequestContext[Any, Any], /
    ) -> AsyncIterator[vault_pb2.WatchChangesResponse]:
        _no_store(ctx)
        # Closed however the stream ends (the client gone, the server stopping): the watch's
        # slot and subscription are given back at once, not when the generator is collected.
        watch = self._sync.watch_changes(
            call_auth(ctx).caller, request.vault_id, request.since_sequence, request.since_epoch
        )
        async with aclosing(watch) as pages:
            async for listed in pages:
                yield self._watch_messages.message(request.vault_id, listed)

    async def list_vaults(
        self, request: vault_pb2.ListVaultsRequest, ctx: RequestContext[Any, Any], /
    ) -> vault_pb2.ListVaultsResponse:
        _no_store(ctx)
        listed = await self._use_cases.list_vaults(call_auth(ctx).caller, request.page_size, request.page_token)
        return vaults_response(listed)

    async def get_vault(
        self, request: vault_pb2.GetVaultRequest, ctx: RequestContext[Any, Any], /
    ) -> vault_pb2.GetVaultResponse:
        _no_store(ctx)
        return vault_response(await self._use_cases.get_vault(call_auth(ctx).caller, request.vault_id))
