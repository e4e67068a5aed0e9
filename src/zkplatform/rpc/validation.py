"""Requests that break the field rules of the protos never reach a servicer."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from connectrpc.request import RequestContext
from google.protobuf.message import Message

from zkplatform.domain.errors import InvalidArgument
from zkplatform.messages.rules import violations_of

REQ = TypeVar("REQ")
RES = TypeVar("RES")


class ValidateRequests:
    """Unary interceptor: a request that breaks its proto rules is refused with a BadRequest."""

    async def intercept_unary(
        self,
        call_next: Callable[[REQ, RequestContext[Any, Any]], Awaitable[RES]],
        request: REQ,
        ctx: RequestContext[Any, Any],
        /,
    ) -> RES:
        if not isinstance(request, Message):
            msg = f"not a protobuf request: {type(request).__name__}"
            raise TypeError(msg)
        if violations := violations_of(request):
            raise InvalidArgument(violations)
        return await call_next(request, ctx)
