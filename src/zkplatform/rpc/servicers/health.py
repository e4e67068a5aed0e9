"""grpc.health.v1.Health: what load balancers and `grpc_health_probe` ask.

The services are mounted only once the store is open; from then on the server
as a whole ("") and each service answer SERVING while the store can be reached
and NOT_SERVING while it cannot (domain/readiness.py: a cached probe, not a
query per check), and Watch sends each change. Health reveals nothing private:
it needs no token.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable
from typing import Any

from connectrpc.code import Code
from connectrpc.request import RequestContext

from zkplatform.domain.readiness import Readiness
from zkplatform.rpc.errors import refusal
from zkplatform_api.grpc.health.v1.health_connect import Health
from zkplatform_api.grpc.health.v1.health_pb2 import (
    HealthCheckRequest,
    HealthCheckResponse,
    HealthListRequest,
    HealthListResponse,
)
from zkplatform_api.platform.v1.errors_pb2 import ErrorReason

SERVING = HealthCheckResponse(status=HealthCheckResponse.SERVING)
NOT_SERVING = HealthCheckResponse(status=HealthCheckResponse.NOT_SERVING)


def _status(ready: bool) -> HealthCheckResponse:
    return SERVING if ready else NOT_SERVING


class HealthServicer(Health):
    def __init__(self, services: Iterable[str], readiness: Readiness) -> None:
        self._services = {"", *services}  # "" asks about the server as a whole
        self._readiness = readiness  # every service needs the store: one status for all

    async def check(self, request: HealthCheckRequest, ctx: RequestContext[Any, Any], /) -> HealthCheckResponse:
        if request.service not in self._services:
            raise refusal(Code.NOT_FOUND, ErrorReason.SERVICE_NOT_FOUND, f"unknown service {request.service}")
        return _status(await self._readiness.ready())

    async def watch(
        self, request: HealthCheckRequest, ctx: RequestContext[Any, Any], /
    ) -> AsyncIterator[HealthCheckResponse]:
        if request.service not in self._services:
            yield HealthCheckResponse(status=HealthCheckResponse.SERVICE_UNKNOWN)
            await asyncio.Event().wait()  # no change to report; the stream ends when the client leaves
            return
        async for ready in self._readiness.changes():
            yield _status(ready)

    async def list(self, request: HealthListRequest, ctx: RequestContext[Any, Any], /) -> HealthListResponse:
        status = _status(await self._readiness.ready())
        return HealthListResponse(statuses=dict.fromkeys(sorted(self._services - {""}), status))
