"""Tokens on every call: a token provider and a connectrpc client interceptor.

    vault = VaultServiceClient(base_url, interceptors=[AuthInterceptor(get_token)])

`get_token` is a token (a string) or a function, plain or async, that returns a fresh one. The
interceptor puts `Authorization: Bearer <token>` on every call, or, with `dpop=key` and the
client's `base_url`, `Authorization: DPoP <token>` and a DPoP proof made for that call. When a
unary call is refused because the token expired, it asks the provider once for a new token and
makes the call once more with it; any other refusal, a second expiry and a stream's expiry are the
caller's (a stream is not repeated: its messages may have been handled already; the next call
carries the new token).
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TypeVar

from connectrpc.code import Code
from connectrpc.errors import ConnectError
from connectrpc.request import RequestContext

from zkplatform_api.platform.v1.errors_pb2 import ErrorReason
from zkplatform_client.dpop import DPoPKey, htu
from zkplatform_client.errors import ERROR_DOMAIN, error_details

REQ = TypeVar("REQ")
RES = TypeVar("RES")

__all__ = ["ERROR_DOMAIN", "AuthInterceptor", "TokenProvider", "is_token_expired"]

TokenCallback = Callable[[], str | Awaitable[str]]


def is_token_expired(error: ConnectError) -> bool:
    """Whether the server refused the call because its token expired (reason TOKEN_EXPIRED).

    Servers before the ErrorReason constants sent no ErrorInfo on `unauthenticated`, and said it in
    the message."""
    if error.code != Code.UNAUTHENTICATED:
        return False
    details = error_details(error)
    if details.reason is not None:
        return details.reason_is(ErrorReason.TOKEN_EXPIRED)
    return error.message == "token expired"


class TokenProvider:
    """The token calls carry: a fixed one, or what a callback returns.

    The callback (a plain or an async function of no argument) is asked for the first token when
    the first call needs it, and for a new one each time a call finds that token expired: once
    for all the calls that found it so at the same time."""

    def __init__(self, source: str | TokenCallback) -> None:
        self._fetch: TokenCallback | None
        self._token: str | None
        if isinstance(source, str):
            if not source:
                raise ValueError("a token provider needs a token, or a function that returns one")
            self._fetch, self._token = None, source
        else:
            self._fetch, self._token = source, None
        self._lock: tuple[asyncio.AbstractEventLoop, asyncio.Lock] | None = None

    @property
    def renewable(self) -> bool:
        """Whether the provider can give another token than the one it has (a callback can)."""
        return self._fetch is not None

    def _asking(self) -> asyncio.Lock:
        """One ask at a time, per event loop (a provider may outlive an `asyncio.run`)."""
        loop = asyncio.get_running_loop()
        if self._lock is None or self._lock[0] is not loop:
            self._lock = (loop, asyncio.Lock())
        return self._lock[1]

    async def token(self) -> str:
        """The current token, asking the callback for a first one."""
        if self._token is None:
            async with self._asking():
                if self._token is None:
                    self._token = await self._ask()
        return self._token

    async def renew(self, expired: str) -> str:
        """A token in place of `expired`: the callback's new one, unless another call renewed it
        already (or the token is fixed: then the same)."""
        if self._fetch is None:
            return await self.token()
        async with self._asking():
            token = self._token
            if token is None or token == expired:
                token = self._token = await self._ask()
            return token

    async def _ask(self) -> str:
        assert self._fetch is not None
        answer = self._fetch()
        token = await answer if inspect.isawaitable(answer) else answer
        if not isinstance(token, str) or not token:
            # Never the value itself: it may be a token after all.
            raise TypeError(f"the token callback returned {type(token).__name__}, not a non-empty str")
        return token


def _http_method(ctx: RequestContext[REQ, RES]) -> str:
    """The method the request goes out with: gRPC and gRPC-Web always POST, whatever `use_get`
    says (only the Connect protocol has the GET form, and ctx.http_method follows `use_get`)."""
    if ctx.request_headers.get("content-type", "").startswith("application/grpc"):
        return "POST"
    return ctx.http_method


def token_provider(source: TokenProvider | str | TokenCallback) -> TokenProvider:
    return source if isinstance(source, TokenProvider) else TokenProvider(source)


class AuthInterceptor:
    """A connectrpc client interceptor (unary and streaming) that authorizes every call.

    `token`: a TokenProvider, a token, or a callback returning one. `dpop`: a key the tokens are
    bound to; each call then carries a proof, which names the call's URL: `base_url` is the
    address the client was made with (the interceptor sees only the procedure's path)."""

    def __init__(
        self, token: TokenProvider | str | TokenCallback, *, dpop: DPoPKey | None = None, base_url: str | None = None
    ) -> None:
        if dpop is not None and not base_url:
            raise ValueError("a DPoP proof names the call's URL: give base_url, the address the client uses")
        if dpop is not None and base_url:
            htu(base_url)  # a malformed URL is refused here, once, rather than at every call
        self.provider = token_provider(token)
        self._dpop = dpop
        self._base_url = (base_url or "").rstrip("/")

    def _authorize(self, ctx: RequestContext[REQ, RES], token: str) -> None:
        headers = ctx.request_headers
        if self._dpop is None:
            headers["authorization"] = f"Bearer {token}"
            return
        url = f"{self._base_url}/{ctx.method.service_name}/{ctx.method.name}"
        headers["authorization"] = f"DPoP {token}"
        headers["dpop"] = self._dpop.proof(_http_method(ctx), url, token)

    @staticmethod
    def _forget(ctx: RequestContext[REQ, RES]) -> None:
        """Once the request is sent: interceptors before this one share the headers, and must not
        find the token there when the call ends (to log them, say)."""
        ctx.request_headers.pop("authorization", None)
        ctx.request_headers.pop("dpop", None)

    async def intercept_unary(
        self,
        call_next: Callable[[REQ, RequestContext[REQ, RES]], Awaitable[RES]],
        request: REQ,
        ctx: RequestContext[REQ, RES],
    ) -> RES:
        token = await self.provider.token()
        try:
            self._authorize(ctx, token)
            try:
                return await call_next(request, ctx)
            except ConnectError as error:
                # Refused at authentication, before anything ran: repeating it is safe, whatever the RPC.
                if not is_token_expired(error):
                    raise
                fresh = await self.provider.renew(token)
                if fresh == token:
                    raise
            self._authorize(ctx, fresh)  # a new proof too: a proof's jti is used once
            return await call_next(request, ctx)
        finally:
            self._forget(ctx)

    async def intercept_client_stream(
        self,
        call_next: Callable[[AsyncIterator[REQ], RequestContext[REQ, RES]], Awaitable[RES]],
        request: AsyncIterator[REQ],
        ctx: RequestContext[REQ, RES],
    ) -> RES:
        token = await self.provider.token()
        try:
            self._authorize(ctx, token)
            return await call_next(request, ctx)
        except ConnectError as error:
            if is_token_expired(error):
                await self.provider.renew(token)
            raise
        finally:
            self._forget(ctx)

    def intercept_server_stream(
        self,
        call_next: Callable[[REQ, RequestContext[REQ, RES]], AsyncIterator[RES]],
        request: REQ,
        ctx: RequestContext[REQ, RES],
    ) -> AsyncIterator[RES]:
        return self._stream(lambda: call_next(request, ctx), ctx)

    def intercept_bidi_stream(
        self,
        call_next: Callable[[AsyncIterator[REQ], RequestContext[REQ, RES]], AsyncIterator[RES]],
        request: AsyncIterator[REQ],
        ctx: RequestContext[REQ, RES],
    ) -> AsyncIterator[RES]:
        return self._stream(lambda: call_next(request, ctx), ctx)

    async def _stream(
        self, start: Callable[[], AsyncIterator[RES]], ctx: RequestContext[REQ, RES]
    ) -> AsyncIterator[RES]:
        """The stream's messages; when it ends because its token expired, the provider is asked for
        a new one (for the next call: the stream is not repeated) and the error goes on."""
        token = await self.provider.token()
        self._authorize(ctx, token)
        stream = start()
        try:
            async for message in stream:
                yield message
        except ConnectError as error:
            if is_token_expired(error):
                await self.provider.renew(token)
            raise
        finally:
            self._forget(ctx)
            aclose = getattr(stream, "aclose", None)
            if aclose is not None:
                await aclose()
