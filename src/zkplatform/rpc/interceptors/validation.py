"""Requests that break the field rules of the protos never reach a servicer."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

from connectrpc.request import RequestContext
from google.protobuf.message import Message

from zkplatform.domain.errors import InvalidArgument
from zkplatform.messages.rules import violations_of

REQ = TypeVar("REQ")
RES = TypeVar("RES")


def _check(request: object) -> None:
    if isinstance(request, Message) and (violations := violations_of(request)):
        raise InvalidArgument(violations)


class Validate:
    """Interceptor: a request that breaks its message's rules answers `invalid_argument`
    with a BadRequest naming each field, after authentication and decoding."""

    async def intercept_unary(
        self,
        call_next: Callable[[REQ, RequestContext[Any, Any]], Awaitable[RES]],
        request: REQ,
        ctx: RequestContext[Any, Any],
        /,
    ) -> RES:
        _check(request)
        return await call_next(request, ctx)

    def intercept_server_stream(
        self,
        call_next: Callable[[REQ, RequestContext[Any, Any]], AsyncIterator[RES]],
        request: REQ,
        ctx: RequestContext[Any, Any],
        /,
    ) -> AsyncIterator[RES]:
        _check(request)
        return call_next(request, ctx)
