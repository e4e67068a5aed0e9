"""Authentication at the edge of every RPC, before the body is parsed.

The contract's order: a token in the URL's query is refused (and revoked)
first, then the Authorization header must carry a live token. The caller is
then available to servicers through `current_caller()`.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

from connectrpc.request import RequestContext

from zkplatform.domain.auth import Authenticator, Caller
from zkplatform.rpc.edge import request_facts

_caller: ContextVar[Caller] = ContextVar("caller")


def current_caller() -> Caller:
    """The authenticated caller of the RPC being served."""
    return _caller.get()


class Authenticate:
    """Metadata interceptor; connectrpc runs it in the task that then runs the handler."""

    def __init__(self, authenticator: Authenticator) -> None:
        self._authenticator = authenticator

    async def on_start(self, ctx: RequestContext[Any, Any]) -> None:
        facts = request_facts.get(None)
        if facts is not None and facts.query_string:
            await self._authenticator.refuse_tokens_in_query(facts.query_string.decode("latin-1"))
        _caller.set(await self._authenticator.authenticate(ctx.request_headers.get("authorization")))

    async def on_end(self, token: None, ctx: RequestContext[Any, Any], error: Exception | None, /) -> None:
        return None
