"""Which application answers a path, and which HTTP methods each procedure takes."""

from __future__ import annotations

from collections.abc import Awaitable, Mapping
from dataclasses import dataclass

from connectrpc.code import Code

from zkplatform.asgi import ASGIApp, Receive, Scope, Send
from zkplatform.domain.readiness import Readiness
from zkplatform.rpc.errors import refusal
from zkplatform.rpc.front.answers import send_error, send_plain
from zkplatform_api.platform.v1.errors_pb2 import ErrorReason

POST_ONLY = ("POST",)
GET_OR_POST = ("GET", "POST")  # procedures declared without side effects: the Connect GET form


@dataclass(frozen=True, slots=True)
class Route:
    app: ASGIApp
    methods: tuple[str, ...] = POST_ONLY


class Routes:
    """Procedure paths to their applications; `GET /healthz` answers `ok` (liveness: the
    process serves), `GET /readyz` `ok` while the store can be reached and 503 while it
    cannot (readiness: domain/readiness.py).

    Any other path answers 404 `unimplemented`, the status Connect clients expect. A
    method a procedure does not take answers 405 with `Allow`, before its body is read:
    connectrpc would treat any method but GET as a POST."""

    def __init__(self, routes: Mapping[str, Route], readiness: Readiness) -> None:
        self._routes = dict(routes)
        self._readiness = readiness

    def __call__(self, scope: Scope, receive: Receive, send: Send) -> Awaitable[None]:
        route = self._routes.get(scope["path"])
        if route is not None and scope["method"] in route.methods:
            return route.app(scope, receive, send)
        return self._answer(scope, send, route)

    async def _answer(self, scope: Scope, send: Send, route: Route | None) -> None:
        """What the front answers itself: the probes, an unknown path, a method not taken."""
        path, method = scope["path"], scope["method"]
        if route is None:
            if path == "/healthz" and method in ("GET", "HEAD"):
                await send_plain(send, 200, b"ok\n")
                return
            if path == "/readyz" and method in ("GET", "HEAD"):
                if await self._readiness.ready():
                    await send_plain(send, 200, b"ok\n")
                else:
                    await send_plain(send, 503, b"store unavailable\n")
                return
            unknown = refusal(Code.UNIMPLEMENTED, ErrorReason.PROCEDURE_NOT_FOUND, f"unknown procedure {path}")
            await send_error(send, scope, unknown, http_status=404)
            return
        allowed = ", ".join(route.methods)
        message = f"{method} is not allowed: this procedure takes {allowed}"
        refused = refusal(Code.UNIMPLEMENTED, ErrorReason.HTTP_METHOD_NOT_ALLOWED, message)
        await send_error(send, scope, refused, http_status=405, headers=[(b"allow", allowed.encode())])


class Dispatch:
    """Several procedures' applications behind one middleware: each path to its own."""

    def __init__(self, apps: Mapping[str, ASGIApp]) -> None:
        self._apps = dict(apps)

    def __call__(self, scope: Scope, receive: Receive, send: Send) -> Awaitable[None]:
        return self._apps[scope["path"]](scope, receive, send)
