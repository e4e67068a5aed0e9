"""The metadata interceptor that tells the call's record (calls.py) how it ended and who called.

It comes before ErrorMapping in the list, so its on_end runs after
ErrorMapping's and sees the final Connect error; it never raises, so
ErrorMapping still sees, and maps, every error.
"""

from __future__ import annotations

from typing import Any, Final

from connectrpc.code import Code
from connectrpc.errors import ConnectError
from connectrpc.request import RequestContext
from opentelemetry import propagate, trace

from zkplatform.domain.auth import Caller
from zkplatform.observability.calls import current_call
from zkplatform.observability.metrics import Metrics
from zkplatform.rpc.auth import current_caller_or_none

# The failed check, from the start of the message the domain refuses with
# (domain/auth.py, rpc/auth.py): a bounded label, never the message itself.
_REFUSALS: Final = (
    ("missing authorization", "missing"),
    ("more than one authorization", "malformed"),
    ("the authorization header must be", "malformed"),
    ("malformed token", "malformed"),
    ("unknown token", "unknown"),
    ("token revoked", "revoked"),
    ("token expired", "expired"),
    ("principal disabled", "disabled"),
    ("a key-bound token", "dpop"),
    ("dpop", "dpop"),
)


def refusal_reason(message: str) -> str:
    lowered = message.lower()
    return next((reason for prefix, reason in _REFUSALS if lowered.startswith(prefix)), "other")


class Observe:
    """Writes the final code and the principal into the call's record; with
    tracing on, also onto the call's span, whose context the answer carries
    back in `traceparent`."""

    def __init__(self, metrics: Metrics | None, *, tracing: bool = False) -> None:
        self._metrics = metrics
        self._tracing = tracing

    async def on_start(self, ctx: RequestContext[Any, Any]) -> Caller | None:
        # The caller already in the context, if any, is not this call's: a server
        # runs each call in a task of its own, but an in-process client does not.
        return current_caller_or_none()

    async def on_end(self, before: Caller | None, ctx: RequestContext[Any, Any], error: Exception | None, /) -> None:
        call = current_call.get()
        if isinstance(error, ConnectError):
            code = error.code
        elif error is None:
            code = None
        else:  # what ErrorMapping let through untouched: connectrpc answers it as unknown
            code = Code.UNKNOWN
        caller = current_caller_or_none()
        if caller is None or caller is before:
            principal_id = token_id = ""
        else:
            principal_id, token_id = caller.principal.principal_id, caller.token.token_id
        if code is Code.UNAUTHENTICATED and self._metrics is not None and isinstance(error, ConnectError):
            self._metrics.auth_refusals.labels(refusal_reason(error.message)).inc()
        if call is not None:
            call.code = code
            call.principal_id, call.token_id = principal_id, token_id
        if self._tracing:
            span = trace.get_current_span()
            span.set_attribute("rpc.response.status_code", code.value if code is not None else "ok")
            if principal_id:
                span.set_attribute("enduser.id", principal_id)
                span.set_attribute("zkplatform.token_id", token_id)
            carrier: dict[str, str] = {}
            propagate.inject(carrier)
            for key, value in carrier.items():
                ctx.response_headers[key] = value
