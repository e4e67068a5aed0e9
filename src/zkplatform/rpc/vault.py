"""VaultService: protobuf <-> the vault use cases."""

from __future__ import annotations

from typing import Any

from connectrpc.request import RequestContext

from zkplatform.domain.vault import VaultUseCases
from zkplatform.messages.convert import delete_response
from zkplatform.rpc.auth import current_caller
from zkplatform_api.platform.v1 import vault_pb2
from zkplatform_api.platform.v1.vault_connect import VaultService


class VaultServicer(VaultService):
    def __init__(self, use_cases: VaultUseCases) -> None:
        self._use_cases = use_cases

    async def delete_item(
        self, request: vault_pb2.DeleteItemRequest, ctx: RequestContext[Any, Any], /
    ) -> vault_pb2.DeleteItemResponse:
        tombstone = await self._use_cases.delete_item(
            current_caller(), request.vault_id, request.item_id, request.base_version
        )
        return delete_response(tombstone)
