"""Every authenticated mint attempt counts against the mint rate, before the body is read."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from connectrpc.request import RequestContext

from zkplatform.domain.broker import BrokerUseCases
from zkplatform.rpc.call_auth import authenticated, call_auth
from zkplatform_api.platform.v1 import broker_pb2


class CountMintAttempts:
    """Metadata interceptor after authentication: every authenticated mint attempt
    counts against the rate, even one whose body turns out malformed, so it is
    counted before the body is read. Listing and revoking tokens are not mints."""

    def __init__(self, use_cases: BrokerUseCases) -> None:
        self._use_cases = use_cases

    async def on_start(self, ctx: RequestContext[Any, Any]) -> None:
        if ctx.method.input is broker_pb2.MintUserApiTokenRequest:
            auth = call_auth(ctx)
            authenticated(ctx, replace(auth, mint_attempt=await self._use_cases.count_attempt(auth.caller)))

    async def on_end(self, token: None, ctx: RequestContext[Any, Any], error: Exception | None, /) -> None:
        return None
