"""The ASGI applications `make bench` serves, each on the same server settings.

- `raw_app`: reads the body and answers fixed bytes: the ceiling of the server.
- `noop_app()`: connectrpc's VaultService and BrokerService answering every
  unary call with a fixed message (bench/answers.py) with our codecs: the
  ceiling of the Connect runtime. WatchChanges, a stream, is left out.
- `platform_app()`: the real application on the memory store, seeded as
  bench/seed.py describes (sizes from BENCH_* variables), its tokens written
  to BENCH_TOKEN_FILE. With `servicers=False`, every layer of it (the front,
  the call record, authentication, the field rules) in front of the no-op
  handler's servicers: what the checks cost before any use case runs. The
  durable stores are seeded by the harness and served by the real
  `zkplatform serve` instead.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from connectrpc.compat import google_protobuf_binary_codec
from connectrpc.interceptor import Interceptor
from connectrpc.request import RequestContext
from prometheus_client import REGISTRY

from bench.seed import Layout, seed
from zkplatform.app import create_app
from zkplatform.asgi import ASGIApp, Message, Receive, Scope, Send
from zkplatform.config import Settings
from zkplatform.observability.metrics import Metrics
from zkplatform.observability.telemetry import Telemetry
from zkplatform.rpc.encoding.codec import CompactJSONCodec
from zkplatform.store.memory import MemoryStore
from zkplatform.wiring import Platform
from zkplatform_api.platform.v1 import broker_pb2, vault_pb2
from zkplatform_api.platform.v1.broker_connect import BrokerService, BrokerServiceASGIApplication
from zkplatform_api.platform.v1.vault_connect import VaultService, VaultServiceASGIApplication

# bench/answers.py is imported by the apps that answer with it only, when they answer: it builds
# its messages with the working tree's code, which an older commit served beside it lacks.


@functools.cache
def _raw_body() -> bytes:
    from bench import answers  # noqa: PLC0415 # see above

    return CompactJSONCodec().encode(answers.DELETED)


async def raw_app(scope: Scope, receive: Receive, send: Send) -> None:
    if scope["type"] != "http":
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
        return
    more = True
    while more:
        message: Message = await receive()
        more = message.get("more_body", False)
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": _raw_body()})


async def _lifespan(receive: Receive, send: Send) -> None:
    while (await receive())["type"] != "lifespan.shutdown":
        await send({"type": "lifespan.startup.complete"})
    await send({"type": "lifespan.shutdown.complete"})


class _FixedVault(VaultService):
    async def delete_item(
        self, request: vault_pb2.DeleteItemRequest, ctx: RequestContext[Any, Any], /
    ) -> vault_pb2.DeleteItemResponse:
        from bench import answers  # noqa: PLC0415 # see _raw_body

        return answers.DELETED

    async def create_item(
        self, request: vault_pb2.CreateItemRequest, ctx: RequestContext[Any, Any], /
    ) -> vault_pb2.CreateItemResponse:
        from bench import answers  # noqa: PLC0415 # see _raw_body

        return answers.CREATED

    async def update_item(
        self, request: vault_pb2.UpdateItemRequest, ctx: RequestContext[Any, Any], /
    ) -> vault_pb2.UpdateItemResponse:
        from bench import answers  # noqa: PLC0415 # see _raw_body

        return answers.UPDATED

    async def get_item(
        self, request: vault_pb2.GetItemRequest, ctx: RequestContext[Any, Any], /
    ) -> vault_pb2.GetItemResponse:
        from bench import answers  # noqa: PLC0415 # see _raw_body

        return answers.GOT

    async def list_items(
        self, request: vault_pb2.ListItemsRequest, ctx: RequestContext[Any, Any], /
    ) -> vault_pb2.ListItemsResponse:
        from bench import answers  # noqa: PLC0415 # see _raw_body

        return answers.LISTED

    async def list_changes(
        self, request: vault_pb2.ListChangesRequest, ctx: RequestContext[Any, Any], /
    ) -> vault_pb2.ListChangesResponse:
        from bench import answers  # noqa: PLC0415 # see _raw_body

        return answers.CHANGES


class _FixedBroker(BrokerService):
    async def mint_user_api_token(
        self, request: broker_pb2.MintUserApiTokenRequest, ctx: RequestContext[Any, Any], /
    ) -> broker_pb2.MintUserApiTokenResponse:
        from bench import answers  # noqa: PLC0415 # see _raw_body

        return answers.MINTED

    async def list_tokens(
        self, request: broker_pb2.ListTokensRequest, ctx: RequestContext[Any, Any], /
    ) -> broker_pb2.ListTokensResponse:
        from bench import answers  # noqa: PLC0415 # see _raw_body

        return answers.TOKENS

    async def revoke_token(
        self, request: broker_pb2.RevokeTokenRequest, ctx: RequestContext[Any, Any], /
    ) -> broker_pb2.RevokeTokenResponse:
        from bench import answers  # noqa: PLC0415 # see _raw_body

        return answers.REVOKED


def noop_app() -> ASGIApp:
    codecs = [google_protobuf_binary_codec(), CompactJSONCodec()]
    vault = VaultServiceASGIApplication(_FixedVault(), codecs=codecs)
    broker = BrokerServiceASGIApplication(_FixedBroker(), codecs=codecs)

    async def route(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        app = broker if scope["path"].startswith("/platform.v1.BrokerService/") else vault
        await app(scope, receive, send)

    return route


class _StoreWithoutLastUse(MemoryStore):
    """The memory store, recording no token's last use: the baseline that shows what recording it costs."""

    async def touch_token(self, token_id: str, now: int, stale_before: int) -> None:
        return None


class _Uninstrumented(Telemetry):
    """No metrics, no tracing, and not even their interceptor: the baseline that shows
    what the instrumentation costs when it is off. Telemetry mounts no interceptor without
    tracing either, so the app as served runs the same code per call as this one."""

    def interceptors(self) -> list[Interceptor]:
        return []


def platform_app(
    *, record_last_use: bool = True, metrics: bool = False, instrumented: bool = True, servicers: bool = True
) -> ASGIApp:
    """The app as `serve` builds it (metrics off, tracing off: no OTEL_* here), or with
    metrics recorded (not served: a scrape is not a call's cost), or uninstrumented, or
    answering every call with the no-op handler's fixed message once its checks passed."""
    settings = Settings.from_env()
    store = MemoryStore() if record_last_use else _StoreWithoutLastUse()
    platform = Platform.build(store, b"bench-pepper-of-thirty-two-bytes", policy=settings.mint_policy)
    layout = Layout(
        vault_size=int(os.environ.get("BENCH_VAULT_SIZE", "1000")),
        items=int(os.environ.get("BENCH_ITEMS", "100000")),
        minters=int(os.environ.get("BENCH_MINTERS", "500")),
        own_tokens=int(os.environ.get("BENCH_OWN_TOKENS", "0")),
    )
    # In a thread of its own: uvicorn calls this factory inside its running event loop.
    with ThreadPoolExecutor(max_workers=1) as thread:
        tokens = thread.submit(asyncio.run, seed(platform.store, platform.issuer, layout)).result()
    tokens.write(Path(os.environ["BENCH_TOKEN_FILE"]))
    telemetry = Telemetry(Metrics(REGISTRY)) if metrics else Telemetry() if instrumented else _Uninstrumented()
    if servicers:
        return _create_app(settings, platform=platform, telemetry=telemetry)
    return _create_app(settings, platform=platform, vault=_FixedVault(), broker=_FixedBroker(), telemetry=telemetry)


def _create_app(settings: Settings, **parts: Any) -> ASGIApp:
    """create_app with the parts its code takes: an older commit's, served beside this one
    (bench/checkouts.py), may predate some (`telemetry`), and then builds its default."""
    accepted = inspect.signature(create_app).parameters
    return create_app(settings, **{name: part for name, part in parts.items() if name in accepted})
