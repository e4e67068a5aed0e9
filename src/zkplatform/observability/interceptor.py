"""The metadata interceptor that writes a call's outcome onto its span, when tracing is on.

It comes before the error mapping (rpc/errors.py) in the list, so its on_end runs
after the mapping's, which has told the call's record (calls.py) the final code
by then; it never raises. Without tracing it is not mounted: the record needs no interceptor.
"""

from __future__ import annotations

from typing import Any

from connectrpc.request import RequestContext
from opentelemetry import propagate, trace

from zkplatform.observability.calls import current_call


class SpanOutcome:
    """Writes the final code and the principal onto the call's span, whose context
    the answer carries back in `traceparent`."""

    async def on_start(self, ctx: RequestContext[Any, Any]) -> None:
        return None

    async def on_end(self, token: None, ctx: RequestContext[Any, Any], error: Exception | None, /) -> None:
        call = current_call()
        span = trace.get_current_span()
        code = call.code
        span.set_attribute("rpc.response.status_code", code.value if code is not None else "ok")
        if call.principal_id:
            span.set_attribute("enduser.id", call.principal_id)
            span.set_attribute("zkplatform.token_id", call.token_id)
        carrier: dict[str, str] = {}
        propagate.inject(carrier)
        for key, value in carrier.items():
            ctx.response_headers[key] = value
