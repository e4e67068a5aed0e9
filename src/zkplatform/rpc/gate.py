"""The one metadata interceptor in front of the platform's RPCs.

connectrpc runs it before the body is read: its on_start authenticates the
call (rpc/auth.py), then runs the service's own start check (BrokerService
counts a mint attempt there); its on_end, ErrorMapping's, turns any failure
into its Connect error (rpc/errors.py), and so does its on_start for its own
failures, since connectrpc ends only the interceptors that started. One interceptor rather than one per
concern: connectrpc pays a pair of awaits per interceptor per call, and these
steps always run together, in this order (bench/analysis.md).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from connectrpc.request import RequestContext

from zkplatform.domain.auth import Authenticator, Caller
from zkplatform.rpc.auth import authenticate
from zkplatform.rpc.errors import ErrorMapping, connect_error_of

# A service's check once the caller is known, before the body is read.
ThenCheck = Callable[[RequestContext[Any, Any], Caller], Awaitable[None]]


class Gate(ErrorMapping):
    """Authenticates every call, then runs `then`; maps every failure on the way out."""

    def __init__(self, authenticator: Authenticator, then: ThenCheck | None = None) -> None:
        self._authenticator = authenticator
        self._then = then

    async def on_start(self, ctx: RequestContext[Any, Any]) -> None:
        try:
            caller = await authenticate(self._authenticator, ctx)
            if self._then is not None:
                await self._then(ctx, caller)
        except Exception as error:  # connectrpc runs no on_end of an interceptor whose on_start failed
            mapped = connect_error_of(error, ctx)
            if mapped is error:
                raise
            raise mapped from error
