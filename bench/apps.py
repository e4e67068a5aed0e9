"""The real application as `make bench` serves it in one process, each setup on the same server
settings (the apps that do no call's work, its ceilings, are bench/noop.py's).

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
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from connectrpc.interceptor import Interceptor
from prometheus_client import REGISTRY

from bench.other_commits import create_app
from bench.seed import Layout, seed
from zkplatform.asgi import ASGIApp
from zkplatform.config import Settings
from zkplatform.observability.metrics import Metrics
from zkplatform.observability.telemetry import Telemetry
from zkplatform.store.memory import MemoryStore
from zkplatform.wiring import Platform


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
        return create_app(settings, platform=platform, telemetry=telemetry)
    # Only here: bench/noop.py builds its answers with the working tree's code, which an older
    # commit served beside it (bench/other_commits.py) lacks.
    from bench.noop import FixedBroker, FixedVault  # noqa: PLC0415

    return create_app(settings, platform=platform, vault=FixedVault(), broker=FixedBroker(), telemetry=telemetry)
