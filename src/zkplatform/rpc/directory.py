"""DirectoryService: protobuf <-> the key directory's use cases."""

from __future__ import annotations

from typing import Any

from connectrpc.request import RequestContext

from zkplatform.domain.key_directory import KeyDirectory
from zkplatform.messages.directory import (
    key_log_response,
    publish_response,
    recipient_keys_response,
    revoke_response,
)
from zkplatform.messages.request_ids import request_id_of
from zkplatform.rpc.auth import current_caller
from zkplatform_api.platform.v1 import directory_pb2
from zkplatform_api.platform.v1.directory_connect import DirectoryService


def _no_store(ctx: RequestContext[Any, Any]) -> None:
    """Who holds which key is the tenant's business: no cache (a browser's, a proxy's) may keep
    an answer, which the reads may give to the Connect GET form. Set before the use case runs,
    so that its refusals carry it too."""
    ctx.response_headers["cache-control"] = "no-store"


class DirectoryServicer(DirectoryService):
    def __init__(self, directory: KeyDirectory) -> None:
        self._directory = directory

    async def publish_key(
        self, request: directory_pb2.PublishKeyRequest, ctx: RequestContext[Any, Any], /
    ) -> directory_pb2.PublishKeyResponse:
        _no_store(ctx)
        published = await self._directory.publish(
            current_caller(), request.public_key_jwk, request=request_id_of(request)
        )
        return publish_response(published)

    async def revoke_key(
        self, request: directory_pb2.RevokeKeyRequest, ctx: RequestContext[Any, Any], /
    ) -> directory_pb2.RevokeKeyResponse:
        _no_store(ctx)
        return revoke_response(await self._directory.revoke(current_caller(), request.key_id))

    async def get_recipient_keys(
        self, request: directory_pb2.GetRecipientKeysRequest, ctx: RequestContext[Any, Any], /
    ) -> directory_pb2.GetRecipientKeysResponse:
        _no_store(ctx)
        found = await self._directory.recipient_keys(current_caller(), request.principal_ids)
        return recipient_keys_response(found)

    async def list_key_log(
        self, request: directory_pb2.ListKeyLogRequest, ctx: RequestContext[Any, Any], /
    ) -> directory_pb2.ListKeyLogResponse:
        _no_store(ctx)
        page = await self._directory.key_log(
            current_caller(), request.since_index, request.page_size, request.page_token
        )
        return key_log_response(page)
