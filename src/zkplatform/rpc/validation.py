"""Request validation from the protovalidate rules declared in the protos."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import protovalidate
from connectrpc.request import RequestContext
from google.protobuf.message import Message

from zkplatform.domain.errors import FieldViolation
from zkplatform.rpc.errors import bad_request
from zkplatform.rpc.names import json_name

_validator = protovalidate.Validator()

REQ = TypeVar("REQ")
RES = TypeVar("RES")


def violations_of(message: Message) -> list[FieldViolation]:
    """Every rule the message breaks, each named by its field path (or "" for the message)."""
    return [
        FieldViolation(
            field=_field_path(violation.proto),
            description=violation.proto.message or violation.proto.rule_id,
        )
        for violation in _validator.collect_violations(message)
    ]


def _field_path(proto: Any) -> str:
    if proto.field is None:
        return ""
    return ".".join(_element(element) for element in proto.field.elements)


def _element(element: Any) -> str:
    name = json_name(element.field_name)
    if (subscript := element.subscript) is not None:
        return f"{name}[{subscript.value!r}]" if isinstance(subscript.value, str) else f"{name}[{subscript.value}]"
    return name


class ValidateRequests:
    """Unary interceptor: a request that breaks its proto rules never reaches a servicer."""

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
            summary = "; ".join(f"{v.field}: {v.description}" if v.field else v.description for v in violations)
            raise bad_request(violations, f"invalid request: {summary}")
        return await call_next(request, ctx)
