"""A token seen in a URL has leaked: URLs are logged, cached and shared.

Any token found in the path or the query is revoked at once, whatever the path
and whatever else is wrong with the request, and the request is refused with
`invalid_argument` naming where the token was (never the token).
"""

from __future__ import annotations

from urllib.parse import parse_qsl

from connectrpc.code import Code

from zkplatform.asgi import ASGIApp, Receive, Scope, Send
from zkplatform.domain import tokens
from zkplatform.domain.auth import Authenticator
from zkplatform.domain.errors import FieldViolation, InvalidArgument
from zkplatform.observability.calls import client_address, request_id
from zkplatform.rpc.errors import refusal
from zkplatform.rpc.front.answers import send_error
from zkplatform_api.platform.v1.errors_pb2 import ErrorReason

_ADVICE = "a token must never be sent in the URL; it has been revoked, use the Authorization header"


class RevokeLeakedTokens:
    def __init__(self, app: ASGIApp, authenticator: Authenticator) -> None:
        self._app = app
        self._authenticator = authenticator

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path: str = scope["path"]
        query: bytes = scope["query_string"]
        if not query and tokens.PREFIX not in path:  # the common case, at the cost of one substring search
            await self._app(scope, receive, send)
            return
        places, found = leaks_in(path, query)
        if not places:
            await self._app(scope, receive, send)
            return
        if found:
            await self._authenticator.revoke_leaked(found, request_id(), client_address())
        leaks = InvalidArgument([FieldViolation(place, _ADVICE) for place in places])
        refused = refusal(Code.INVALID_ARGUMENT, ErrorReason.TOKEN_IN_URL, str(leaks), violations=leaks.violations)
        await send_error(send, scope, refused)


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
