"""Connect protocol rules that connectrpc leaves to the application."""

from __future__ import annotations

from typing import Any

from connectrpc.code import Code
from connectrpc.errors import ConnectError
from connectrpc.request import RequestContext

from zkplatform.rpc.metadata import StartCheck

_GRPC_CONTENT_TYPE = "application/grpc"  # also the prefix of gRPC-Web's


class RequireProtocolVersion(StartCheck):
    """Metadata interceptor: Connect-protocol calls must send `Connect-Protocol-Version`.

    connectrpc refuses a wrong value but accepts a missing header; the spec of
    this API makes it required. gRPC and gRPC-Web calls do not use the header.
    """

    async def on_start(self, ctx: RequestContext[Any, Any]) -> None:
        headers = ctx.request_headers
        if headers.get("content-type", "").startswith(_GRPC_CONTENT_TYPE):
            return
        if "connect-protocol-version" not in headers:
            raise ConnectError(Code.INVALID_ARGUMENT, "missing required header Connect-Protocol-Version: 1")
