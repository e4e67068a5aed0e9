"""The Connect protocol version, required on every Connect call of the platform.

connectrpc refuses a wrong `Connect-Protocol-Version` but accepts a missing one,
and reads no `connect` parameter of a GET. Health needs neither: load balancers
probe it with whatever they send. gRPC and gRPC-Web calls carry no such header.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl

from connectrpc.code import Code
from connectrpc.errors import ConnectError
from connectrpc.request import RequestContext

from zkplatform.observability.calls import current_call
from zkplatform.rpc.errors import refusal
from zkplatform_api.platform.v1.errors_pb2 import ErrorReason

# Content types of Connect unary calls (streaming ones are application/connect+...).
_CONNECT_UNARY_TYPES = ("application/json", "application/proto")


class RequireProtocolVersion:
    """Metadata interceptor: a Connect unary call without `Connect-Protocol-Version`
    (a GET without `connect=v1` in its query, for which the header also stands)
    answers `invalid_argument` before the token is looked at."""

    async def on_start(self, ctx: RequestContext[Any, Any]) -> None:
        if "connect-protocol-version" in ctx.request_headers:
            return
        if ctx.http_method == "GET":
            query = current_call().scope.get("query_string", b"").decode("latin-1")
            versions = [value for key, value in parse_qsl(query) if key == "connect"]
            if versions == ["v1"]:
                return
            if versions:
                raise _refused("the query parameter connect must be v1 (once)")
            raise _refused("missing required query parameter connect=v1 (or header Connect-Protocol-Version: 1)")
        if ctx.request_headers.get("content-type", "").lower().startswith(_CONNECT_UNARY_TYPES):
            raise _refused("missing required header Connect-Protocol-Version: 1")

    async def on_end(self, token: None, ctx: RequestContext[Any, Any], error: Exception | None, /) -> None:
        return None


def _refused(message: str) -> ConnectError:
    return refusal(Code.INVALID_ARGUMENT, ErrorReason.PROTOCOL_VERSION_INVALID, message)
