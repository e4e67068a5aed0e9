"""grpc.health.v1.Health: what load balancers and `grpc_health_probe` ask.

The services are mounted only once the store is open, so a server that
answers is serving. Health reveals nothing private: it needs no token.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable
from typing import Any

from connectrpc.code import Code
from connectrpc.request import RequestContext

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


class HealthServicer(Health):
    def __init__(self, services: Iterable[str]) -> None:
        self._services = {"", *services}  # "" asks about the server as a whole

    async def check(self, request: HealthCheckRequest, ctx: RequestContext[Any, Any], /) -> HealthCheckResponse:
        if request.service not in self._services:
            raise refusal(Code.NOT_FOUND, ErrorReason.SERVICE_NOT_FOUND, f"unknown service {request.service}")
        return SERVING

    async def watch(
        self, request: HealthCheckRequest, ctx: RequestContext[Any, Any], /
    ) -> AsyncIterator[HealthCheckResponse]:
        if request.service in self._services:
            yield SERVING
        else:
            yield HealthCheckResponse(status=HealthCheckResponse.SERVICE_UNKNOWN)
        await asyncio.Event().wait()  # no change to report; the stream ends when the client leaves

    async def list(self, request: HealthListRequest, ctx: RequestContext[Any, Any], /) -> HealthListResponse:
        return HealthListResponse(statuses=dict.fromkeys(sorted(self._services - {""}), SERVING))
