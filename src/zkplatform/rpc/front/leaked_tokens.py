"""A token seen in a URL has leaked: URLs are logged, cached and shared. So has one in
`X-Request-Id`, which every proxy and tracer on the way logs, and which the server itself
would write in its access line, its audit events and its answer.

Any token found in the path, the query or `X-Request-Id` is revoked at once, whatever the
path and whatever else is wrong with the request, and the request is refused with
`invalid_argument` naming where the token was (never the token): TOKEN_IN_URL, or
TOKEN_MISPLACED for the header alone. A token in a field of a request message is the
business of rpc/interceptors/leaked_fields.py, once the message is read.
"""

from __future__ import annotations

from collections.abc import Awaitable, Iterable
from urllib.parse import parse_qsl

from connectrpc.code import Code

from zkplatform.asgi import ASGIApp, Receive, Scope, Send
from zkplatform.domain import tokens
from zkplatform.domain.auth import Authenticator
from zkplatform.domain.errors import FieldViolation, InvalidArgument
from zkplatform.observability.calls import REQUEST_ID_HEADER, client_address, request_id
from zkplatform.rpc.errors import refusal
from zkplatform.rpc.front.answers import send_error
from zkplatform_api.platform.v1.errors_pb2 import ErrorReason

_ADVICE = "a token must never be sent in the URL; it has been revoked, use the Authorization header"
_PREFIX = tokens.PREFIX.encode()
_HEADER_ADVICE = "a token must never be sent as a request id; it has been revoked, use the Authorization header"


class RevokeLeakedTokens:
    def __init__(self, app: ASGIApp, authenticator: Authenticator) -> None:
        self._app = app
        self._authenticator = authenticator

    def __call__(self, scope: Scope, receive: Receive, send: Send) -> Awaitable[None]:
        path: str = scope["path"]
        query: bytes = scope["query_string"]
        in_header = tokens_in_request_ids(scope["headers"])
        if not query and tokens.PREFIX not in path and not in_header:  # the common case: two substring searches
            return self._app(scope, receive, send)
        places, found = leaks_in(path, query)
        if not places and not in_header:
            return self._app(scope, receive, send)
        return self._refuse(scope, send, places, found, in_header)

    async def _refuse(
        self, scope: Scope, send: Send, places: list[str], found: list[str], in_header: list[str]
    ) -> None:
        await self._authenticator.revoke_leaked(found, request_id(), client_address())
        await self._authenticator.revoke_leaked(in_header, request_id(), client_address(), "as a request id")
        violations = [FieldViolation(place, _ADVICE) for place in places]
        if in_header:
            violations.append(FieldViolation(REQUEST_ID_HEADER.decode(), _HEADER_ADVICE))
        reason = ErrorReason.TOKEN_IN_URL if places else ErrorReason.TOKEN_MISPLACED
        leaks = InvalidArgument(violations)
        await send_error(send, scope, refusal(Code.INVALID_ARGUMENT, reason, str(leaks), violations=leaks.violations))


def tokens_in_request_ids(headers: Iterable[tuple[bytes, bytes]]) -> list[str]:
    """The tokens in the request's X-Request-Id headers (observability/calls.py never takes such an id)."""
    found: list[str] = []
    for key, value in headers:
        if key == REQUEST_ID_HEADER and _PREFIX in value:
            found += tokens.find_in(value.decode("latin-1"))
    return found


def leaks_in(path: str, query: bytes) -> tuple[list[str], list[str]]:
    """Where the URL carries tokens (query parameter names, or "path"), and the tokens: in the
    path, or in a query parameter's name or value, alone or inside a longer string;
    `access_token` is refused whatever it holds."""
    places: list[str] = []
    found: list[str] = []
    if in_path := tokens.find_in(path):
        places.append("path")
        found += in_path
    for name, value in parse_qsl(query.decode("latin-1"), keep_blank_values=True):
        in_name = tokens.find_in(name)
        if (in_param := in_name + tokens.find_in(value)) or name == "access_token":
            places.append("a query parameter's name" if in_name else name)  # never echo a token
            found += in_param
    return list(dict.fromkeys(places)), list(dict.fromkeys(found))
