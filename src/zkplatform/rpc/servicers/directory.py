"""DirectoryService: protobuf <-> the key directory's use cases."""

from __future__ import annotations

from typing import Any

from connectrpc.request import RequestContext

from zkplatform.domain.key_directory import KeyDirectory
from zkplatform.messages.directory import (
    key_log_response,
    publish_response,
    recipient_keys_response,
    reset_response,
    revoke_response,
)
from zkplatform.messages.request_ids import request_id_of
from zkplatform.rpc.call_auth import call_auth
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

    async def publish_device(
        self, request: directory_pb2.PublishDeviceRequest, ctx: RequestContext[Any, Any], /
    ) -> directory_pb2.PublishDeviceResponse:
        _no_store(ctx)
        answer = await self._directory.publish_device(
            call_auth(ctx).caller, request.statement, request.signature, request.endorsement
        )
        return publish_response(answer)

    async def revoke_device(
        self, request: directory_pb2.RevokeDeviceRequest, ctx: RequestContext[Any, Any], /
    ) -> directory_pb2.RevokeDeviceResponse:
        _no_store(ctx)
        answer = await self._directory.revoke_device(call_auth(ctx).caller, request.statement, request.signature)
        return revoke_response(answer)

    async def reset_principal(
        self, request: directory_pb2.ResetPrincipalRequest, ctx: RequestContext[Any, Any], /
    ) -> directory_pb2.ResetPrincipalResponse:
        _no_store(ctx)
        answer = await self._directory.reset_principal(
            call_auth(ctx).caller, request.principal_id, request_id_of(request)
        )
        return reset_response(answer)

    async def get_recipient_keys(
        self, request: directory_pb2.GetRecipientKeysRequest, ctx: RequestContext[Any, Any], /
    ) -> directory_pb2.GetRecipientKeysResponse:
        _no_store(ctx)
        page = await self._directory.recipient_devices(
            call_auth(ctx).caller, request.principal_ids, request.page_size, request.page_token
        )
        return recipient_keys_response(page)

    async def list_key_log(
        self, request: directory_pb2.ListKeyLogRequest, ctx: RequestContext[Any, Any], /
    ) -> directory_pb2.ListKeyLogResponse:
        _no_store(ctx)
        page = await self._directory.key_log_page(
            call_auth(ctx).caller, request.start_index, request.page_size, request.page_token
        )
        return key_log_response(page)
