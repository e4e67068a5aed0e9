"""VaultService: protobuf <-> the vault use cases."""

from __future__ import annotations

from typing import Any

from connectrpc.request import RequestContext

from zkplatform.domain.vault import VaultUseCases
from zkplatform.messages.convert import change_response, get_response, item_content, list_response
from zkplatform.rpc.auth import current_caller
from zkplatform_api.platform.v1 import vault_pb2
from zkplatform_api.platform.v1.vault_connect import VaultService


def _no_store(ctx: RequestContext[Any, Any]) -> None:
    """Item content must never sit in a cache (a browser's, a proxy's): GetItem and
    ListItems may be called with GET, and an answer of any method is marked so.
    Set before the use case runs, so that its refusals (a 404 is cacheable by
    default) carry it too."""
    ctx.response_headers["cache-control"] = "no-store"


class VaultServicer(VaultService):
    def __init__(self, use_cases: VaultUseCases) -> None:
        self._use_cases = use_cases

    async def delete_item(
        self, request: vault_pb2.DeleteItemRequest, ctx: RequestContext[Any, Any], /
    ) -> vault_pb2.DeleteItemResponse:
        _no_store(ctx)
        tombstone = await self._use_cases.delete_item(
            current_caller(), request.vault_id, request.item_id, request.base_version
        )
        return change_response(tombstone, vault_pb2.DeleteItemResponse())

    async def create_item(
        self, request: vault_pb2.CreateItemRequest, ctx: RequestContext[Any, Any], /
    ) -> vault_pb2.CreateItemResponse:
        _no_store(ctx)
        created = await self._use_cases.create_item(
            current_caller(), request.vault_id, request.item_id, item_content(request)
        )
        return change_response(created, vault_pb2.CreateItemResponse())

    async def update_item(
        self, request: vault_pb2.UpdateItemRequest, ctx: RequestContext[Any, Any], /
    ) -> vault_pb2.UpdateItemResponse:
        _no_store(ctx)
        updated = await self._use_cases.update_item(
            current_caller(), request.vault_id, request.item_id, request.base_version, item_content(request)
        )
        return change_response(updated, vault_pb2.UpdateItemResponse())

    async def get_item(
        self, request: vault_pb2.GetItemRequest, ctx: RequestContext[Any, Any], /
    ) -> vault_pb2.GetItemResponse:
        _no_store(ctx)
        item = await self._use_cases.get_item(current_caller(), request.vault_id, request.item_id)
        return get_response(item)

    async def list_items(
        self, request: vault_pb2.ListItemsRequest, ctx: RequestContext[Any, Any], /
    ) -> vault_pb2.ListItemsResponse:
        _no_store(ctx)
        listed = await self._use_cases.list_items(
            current_caller(), request.vault_id, request.page_size, request.page_token, request.show_deleted
        )
        return list_response(request.vault_id, listed)
