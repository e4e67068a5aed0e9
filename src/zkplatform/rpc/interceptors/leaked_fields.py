"""A token in a field of a request message has leaked: ids and names are logged, traced, stored
in the audit trail and shown back, so a secret among them would stay wherever they go.

Every string of the decoded request (every field, nested and repeated, map keys and values)
is searched for the token format, as the URL is at the front (rpc/front/leaked_tokens.py).
Tokens found are revoked, and the request is refused with `invalid_argument`
(TOKEN_MISPLACED) naming each field by its JSON path, never the token, before the field rules
(rpc/interceptors/validation.py) or the servicer see it: whatever else is wrong with the request. A token
is never a field of any request of the API (the secret is only ever answered), so nothing
legitimate is refused.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any, Final, TypeVar

from connectrpc.request import RequestContext
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from zkplatform.domain import tokens
from zkplatform.domain.auth import Authenticator
from zkplatform.domain.errors import FieldViolation, TokenMisplaced
from zkplatform.observability.calls import client_address, request_id

REQ = TypeVar("REQ")
RES = TypeVar("RES")

_PREFIX: Final = tokens.PREFIX.encode()
_ADVICE: Final = "a token must never be sent in a request's fields; it has been revoked, use the Authorization header"


class RevokeTokensInMessages:
    """Interceptor: a request message holding a token answers `invalid_argument`, the token revoked."""

    def __init__(self, authenticator: Authenticator) -> None:
        self._authenticator = authenticator

    async def intercept_unary(
        self,
        call_next: Callable[[REQ, RequestContext[Any, Any]], Awaitable[RES]],
        request: REQ,
        ctx: RequestContext[Any, Any],
        /,
    ) -> RES:
        await self._check(request)
        return await call_next(request, ctx)

    async def intercept_server_stream(
        self,
        call_next: Callable[[REQ, RequestContext[Any, Any]], AsyncIterator[RES]],
        request: REQ,
        ctx: RequestContext[Any, Any],
        /,
    ) -> AsyncIterator[RES]:
        await self._check(request)
        async for response in call_next(request, ctx):
            yield response

    async def _check(self, request: object) -> None:
        # Every string of a message, however nested, is in its binary encoding as it is (UTF-8):
        # a message whose encoding lacks the prefix holds no token, and most are ruled out so,
        # for less than walking their fields costs.
        if not isinstance(request, Message) or _PREFIX not in request.SerializePartialToString():
            return
        places: list[str] = []
        found: list[str] = []
        for path, text in strings_of(request):
            if tokens.PREFIX in text and (leaked := tokens.find_in(text)):
                places.append(path)
                found += leaked
        if places:
            where = "in a request's field"
            await self._authenticator.revoke_leaked(dict.fromkeys(found), request_id(), client_address(), where)
            raise TokenMisplaced([FieldViolation(place, _ADVICE) for place in dict.fromkeys(places)])


def strings_of(message: Message, prefix: str = "") -> Iterator[tuple[str, str]]:
    """Every string the message holds, with the JSON path of its field (`wrappedKeys[0].recipientId`;
    a map's entries by the map's name alone, as their keys are what is searched)."""
    for field, value in message.ListFields():
        path = prefix + field.json_name
        entry = field.message_type if field.type == FieldDescriptor.TYPE_MESSAGE else None
        if entry is not None and entry.GetOptions().map_entry:
            for key, item in value.items():
                if isinstance(key, str):
                    yield path, key
                yield from _values_of(entry.fields_by_name["value"], item, path)
        elif field.is_repeated:
            for index, item in enumerate(value):
                yield from _values_of(field, item, f"{path}[{index}]")
        else:
            yield from _values_of(field, value, path)


def _values_of(field: FieldDescriptor, value: Any, path: str) -> Iterator[tuple[str, str]]:
    if field.type == FieldDescriptor.TYPE_STRING:
        yield path, value
    elif field.type == FieldDescriptor.TYPE_MESSAGE:
        yield from strings_of(value, f"{path}.")
