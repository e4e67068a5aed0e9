"""Composition root: builds the platform from settings and the one ASGI app around it."""

from __future__ import annotations

import asyncio
import gc
import logging
from collections.abc import Iterable
from typing import Any

from connectrpc.codec import Codec
from connectrpc.compat import google_protobuf_binary_codec
from google.protobuf import descriptor_pb2
from google.protobuf.descriptor import FileDescriptor

from zkplatform import devmode
from zkplatform.asgi import ASGIApp
from zkplatform.config import Settings
from zkplatform.domain.audit import Actor
from zkplatform.observability.calls import Observer, request_id
from zkplatform.observability.telemetry import Telemetry
from zkplatform.rpc.broker import BrokerServicer, CountMintAttempts
from zkplatform.rpc.codec import CompactJSONCodec
from zkplatform.rpc.edge import Edge
from zkplatform.rpc.errors import ErrorMapping
from zkplatform.rpc.gate import Gate
from zkplatform.rpc.health import HealthServicer
from zkplatform.rpc.origin import Origin
from zkplatform.rpc.reflection import reflection_routes
from zkplatform.rpc.validation import Validating
from zkplatform.rpc.vault import VaultServicer
from zkplatform.wiring import Platform, platform_from
from zkplatform_api.grpc.health.v1 import health_pb2
from zkplatform_api.grpc.health.v1.health_connect import HealthASGIApplication
from zkplatform_api.platform.v1 import broker_pb2, vault_pb2
from zkplatform_api.platform.v1.broker_connect import BrokerService, BrokerServiceASGIApplication
from zkplatform_api.platform.v1.vault_connect import VaultService, VaultServiceASGIApplication

log = logging.getLogger(__name__)

PURGE_INTERVAL_SECONDS = 3600


_NO_SIDE_EFFECTS = descriptor_pb2.MethodOptions.NO_SIDE_EFFECTS


def procedures(file: FileDescriptor, *, side_effect_free_only: bool = False) -> Iterable[str]:
    """The HTTP paths of every RPC declared in a proto file (or only of those
    declared `idempotency_level = NO_SIDE_EFFECTS`: the ones GET may call)."""
    for service in file.services_by_name.values():
        for method in service.methods:
            if not side_effect_free_only or method.GetOptions().idempotency_level == _NO_SIDE_EFFECTS:
                yield f"/{service.full_name}/{method.name}"


def create_app(
    settings: Settings | None = None,
    *,
    platform: Platform | None = None,
    vault: VaultService | None = None,
    broker: BrokerService | None = None,
    telemetry: Telemetry | None = None,
) -> Edge:
    """The ASGI application. Without a platform, each worker opens its own on
    the configured store at start-up (and closes it at shutdown). Tests may
    pass their own platform, servicers or telemetry."""
    settings = Settings.from_env() if settings is None else settings
    telemetry = Telemetry.for_server(metrics=settings.metrics_bind is not None) if telemetry is None else telemetry
    telemetry.install()
    edge = Edge(
        max_body_bytes=settings.max_body_bytes,
        body_read_timeout_seconds=settings.body_read_timeout_seconds,
        max_streams=settings.max_streams,
        origin=Origin(settings.public_url, settings.forwarded_allow_ips),
    )

    def mount(platform: Platform) -> None:
        # Needing no token: reflection (the public contract) and health.
        health_unary, health_streams = health_routes([google_protobuf_binary_codec(), CompactJSONCodec()])
        files = [vault_pb2.DESCRIPTOR, broker_pb2.DESCRIPTOR, health_pb2.DESCRIPTOR]
        readable = {path for file in files for path in procedures(file, side_effect_free_only=True)}
        unary, streams = routes(settings, platform, vault, broker, telemetry), reflection_routes(files) | health_streams
        streams |= platform_streams(unary)
        edge.mount(unary, streams, get_allowed=readable)
        edge.mount(health_unary, protocol_header_required=False)
        edge.observe_with(Observer(telemetry.metrics, {*unary, *streams, *health_unary}, streams))
        edge.revoke_leaked_with(lambda leaked: platform.authenticator.revoke_leaked(leaked, request_id()))

    if platform is not None:
        mount(platform)
        edge.lifespan = settle_heap
        return edge
    maintenance: asyncio.Task[None] | None = None

    async def lifespan(phase: str) -> None:
        nonlocal platform, maintenance
        if phase == "startup":
            platform = await platform_from(settings)
            if settings.dev:
                tenants = await devmode.seed(platform.store, platform.issuer, platform.clock)
                path = devmode.write_credentials(settings.dev_credentials, settings.base_url, tenants)
                log.info("development mode: demo data seeded; credentials written to %s", path)
            maintenance = asyncio.create_task(purge_tombstones_periodically(platform, settings))
            mount(platform)
            await settle_heap(phase)
        elif phase == "shutdown" and platform is not None:
            if maintenance is not None:
                maintenance.cancel()
            await platform.store.close()

    edge.lifespan = lifespan
    return edge


async def settle_heap(phase: str) -> None:
    """At the end of start-up, move everything alive (modules, codecs, a seeded
    memory store) out of the garbage collector's generations: it lives as long
    as the process, and a full collection would otherwise walk all of it, a
    pause that grows with the store (hundreds of milliseconds for a million
    items in memory, the p99 of every call made meanwhile)."""
    if phase == "startup":
        gc.collect()
        gc.freeze()


def routes(
    settings: Settings,
    platform: Platform,
    vault: VaultService | None,
    broker: BrokerService | None,
    telemetry: Telemetry | None = None,
) -> dict[str, ASGIApp]:
    """Every procedure path, routed to its service's Connect application."""
    # The Gate authenticates before the body is parsed, so a bad token answers before a
    # malformed body, and its on_end maps every error (and writes the final code into the
    # call's record). The tracing interceptors before it, when tracing is on, only read the
    # final outcome and never raise. The codecs check the field rules as they decode. The
    # size limit and the protocol header are checked before all of them, by the edge.
    observing = [] if telemetry is None else telemetry.interceptors()
    codecs = [Validating(google_protobuf_binary_codec()), Validating(CompactJSONCodec())]
    limit = settings.max_body_bytes
    authenticator = platform.authenticator
    services: list[tuple[FileDescriptor, ASGIApp]] = [
        (
            vault_pb2.DESCRIPTOR,
            VaultServiceASGIApplication(
                vault or VaultServicer(platform.vault, platform.sync),
                interceptors=[*observing, Gate(authenticator)],
                read_max_bytes=limit,
                codecs=codecs,
            ),
        ),
        (
            broker_pb2.DESCRIPTOR,
            BrokerServiceASGIApplication(
                broker or BrokerServicer(platform.broker),
                interceptors=[*observing, Gate(authenticator, then=CountMintAttempts(platform.broker))],
                read_max_bytes=limit,
                codecs=codecs,
            ),
        ),
    ]
    return {path: app for file, app in services for path in procedures(file)}


def platform_streams(unary: dict[str, ASGIApp]) -> dict[str, ASGIApp]:
    """Take the platform's server-streaming procedures (WatchChanges) out of `unary`: the
    edge serves them as streams (not buffered; counted; ended with `unavailable` at
    shutdown). They keep every interceptor of their service, Authenticate included."""
    files = (vault_pb2.DESCRIPTOR, broker_pb2.DESCRIPTOR)
    paths = [
        f"/{service.full_name}/{method.name}"
        for file in files
        for service in file.services_by_name.values()
        for method in service.methods
        if method.server_streaming
    ]
    return {path: unary.pop(path) for path in paths if path in unary}


def health_routes(codecs: list[Codec[Any, Any]]) -> tuple[dict[str, ASGIApp], dict[str, ASGIApp]]:
    """grpc.health.v1.Health, needing no token: (unary procedures, streams)."""
    served = [s.full_name for f in (vault_pb2.DESCRIPTOR, broker_pb2.DESCRIPTOR) for s in f.services_by_name.values()]
    app: ASGIApp = HealthASGIApplication(HealthServicer(served), interceptors=[ErrorMapping()], codecs=codecs)
    service = health_pb2.DESCRIPTOR.services_by_name["Health"]
    paths = {method: f"/{service.full_name}/{method.name}" for method in service.methods}
    unary = {path: app for method, path in paths.items() if not method.server_streaming}
    return unary, {path: app for method, path in paths.items() if method.server_streaming}


async def purge_tombstones_periodically(platform: Platform, settings: Settings) -> None:
    """Tombstones are kept for the retention period so offline clients learn of
    deletes; after it they are purged (and answer NOT_FOUND). Every worker runs
    this; the purge is idempotent."""
    while True:
        cutoff = platform.clock() - settings.tombstone_retention_days * 86_400
        try:
            purged = await platform.store.purge_tombstones(cutoff, Actor.service(platform.clock()))
        except Exception:
            log.exception("tombstone purge failed; retrying at the next interval")
        else:
            if purged:
                log.info("purged %d tombstone(s) older than %d days", purged, settings.tombstone_retention_days)
        await asyncio.sleep(PURGE_INTERVAL_SECONDS)
