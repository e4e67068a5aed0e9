"""The first interceptor of every service: whatever fails later answers as rpc/errors.py says.

Its on_end sees the failure of every later interceptor, of the body's decoding and of the
servicer, and the errors connectrpc raises itself once the call has started.
"""

from __future__ import annotations

from typing import Any

from connectrpc.request import RequestContext

from zkplatform.domain import errors as domain
from zkplatform.domain.readiness import Readiness
from zkplatform.rpc.errors import connect_error_of


class ErrorMapping:
    """Metadata interceptor whose on_end sees, and replaces, every RPC's error, and
    writes the final code into the call's record (the access line, the metrics)."""

    def __init__(self, max_body_bytes: int | None = None, readiness: Readiness | None = None) -> None:
        self._max_body_bytes = max_body_bytes  # the limit a body over it is told of
        # Told at once of a call that found the store unavailable; never of one that found it busy
        # (StoreBusy): a full pool is overload, and a load balancer must not pull the server for it.
        self._readiness = readiness

    async def on_start(self, ctx: RequestContext[Any, Any]) -> None:
        return None

    async def on_end(self, token: None, ctx: RequestContext[Any, Any], error: Exception | None, /) -> None:
        if error is None:
            return
        if isinstance(error, domain.StoreUnavailable) and self._readiness is not None:
            self._readiness.mark_down()
        mapped = connect_error_of(error, ctx, self._max_body_bytes)
        if mapped is not error:
            raise mapped from error
