"""Composition root: builds the platform from settings and the one ASGI app around it.

The request path is declared once, outermost first: `front_stack` (the HTTP front), then
Routes, then `procedure_stack` (StreamLimits before it for a stream), then the service's
Connect application with `platform_interceptors` (health and reflection: the error mapping
only), then the servicer. docs/architecture.md says what each layer does.
"""

from __future__ import annotations

import asyncio
import gc
import logging
from collections.abc import Collection, Container, Iterable
from dataclasses import dataclass
from functools import partial

from connectrpc.compat import google_protobuf_binary_codec
from connectrpc.interceptor import Interceptor
from google.protobuf import descriptor_pb2
from google.protobuf.descriptor import FileDescriptor

from zkplatform import devmode
from zkplatform.asgi import ASGIApp, Receive, Scope, Send
from zkplatform.config import Settings
from zkplatform.domain.audit import Actor
from zkplatform.observability.calls import ObserveCalls
from zkplatform.observability.telemetry import Telemetry
from zkplatform.rpc.encoding.codec import CompactJSONCodec
from zkplatform.rpc.encoding.last_encoded import LastEncoded
from zkplatform.rpc.front.client_gone import ClientGone
from zkplatform.rpc.front.codings import LowercaseCodings
from zkplatform.rpc.front.cors import Cors
from zkplatform.rpc.front.first_message import FirstMessage
from zkplatform.rpc.front.leaked_tokens import RevokeLeakedTokens
from zkplatform.rpc.front.malformed import RefuseMalformed
from zkplatform.rpc.front.protocol_headers import RefuseBadProtocolHeaders
from zkplatform.rpc.front.request_body import RequestBody
from zkplatform.rpc.front.routing import GET_OR_POST, POST_ONLY, Dispatch, Route, Routes
from zkplatform.rpc.front.stack import Middleware, assemble, layer_of
from zkplatform.rpc.front.stopping import CloseWhenStopping
from zkplatform.rpc.front.streams import Budget, StreamLimits
from zkplatform.rpc.front.unread import Unread
from zkplatform.rpc.interceptors.auth import Authenticate
from zkplatform.rpc.interceptors.error_mapping import ErrorMapping
from zkplatform.rpc.interceptors.leaked_fields import RevokeTokensInMessages
from zkplatform.rpc.interceptors.mint_attempts import CountMintAttempts
from zkplatform.rpc.interceptors.store_down import RefuseWhileStoreDown
from zkplatform.rpc.interceptors.validation import Validate
from zkplatform.rpc.origin import Origin
from zkplatform.rpc.servicers.broker import BrokerServicer
from zkplatform.rpc.servicers.directory import DirectoryServicer
from zkplatform.rpc.servicers.health import HealthServicer
from zkplatform.rpc.servicers.reflection import reflection_routes
from zkplatform.rpc.servicers.vault import VaultServicer
from zkplatform.wiring import Platform, platform_from
from zkplatform_api.grpc.health.v1 import health_pb2
from zkplatform_api.grpc.health.v1.health_connect import HealthASGIApplication
from zkplatform_api.platform.v1 import broker_pb2, directory_pb2, vault_pb2
from zkplatform_api.platform.v1.broker_connect import BrokerService, BrokerServiceASGIApplication
from zkplatform_api.platform.v1.directory_connect import DirectoryServiceASGIApplication
from zkplatform_api.platform.v1.vault_connect import VaultService, VaultServiceASGIApplication

log = logging.getLogger(__name__)

PURGE_INTERVAL_SECONDS = 3600

_NO_SIDE_EFFECTS = descriptor_pb2.MethodOptions.NO_SIDE_EFFECTS


def create_app(
    settings: Settings | None = None,
    *,
    platform: Platform | None = None,
    vault: VaultService | None = None,
    broker: BrokerService | None = None,
    telemetry: Telemetry | None = None,
) -> Server:
    """The ASGI application. Without a platform, each worker opens its own on
    the configured store at start-up (and closes it at shutdown). Tests may
    pass their own platform, servicers or telemetry."""
    settings = Settings.from_env() if settings is None else settings
    telemetry = Telemetry.for_server(metrics=settings.metrics_bind is not None) if telemetry is None else telemetry
    telemetry.install()
    return Server(settings, telemetry, platform, vault=vault, broker=broker)


@dataclass(frozen=True, slots=True)
class Front:
    """The request path, built once the platform exists."""

    app: ASGIApp
    observed: ObserveCalls
    streams: StreamLimits
    connections: CloseWhenStopping


class Server:
    """The one ASGI application the server runs: its start-up opens the platform
    (unless it was given one) and builds the request path around it."""

    def __init__(
        self,
        settings: Settings,
        telemetry: Telemetry,
        platform: Platform | None,
        *,
        vault: VaultService | None = None,
        broker: BrokerService | None = None,
    ) -> None:
        self._settings = settings
        self._telemetry = telemetry
        self._servicers = (vault, broker)
        self._owns_platform = platform is None
        self._platform = platform
        self._front = None if platform is None else self._build(platform)
        self._maintenance: asyncio.Task[None] | None = None
        self._pushing: asyncio.Task[None] | None = None  # the witness pusher's loop, per worker

    def _build(self, platform: Platform) -> Front:
        return build_front(self._settings, platform, self._telemetry, *self._servicers)

    @property
    def platform(self) -> Platform | None:
        """The platform the server runs on, once started."""
        return self._platform

    async def startup(self) -> None:
        """Open the platform and build the request path (once; a second call does nothing)."""
        if self._front is None:
            platform = await platform_from(self._settings)
            self._platform = platform
            if self._settings.dev:
                await self._seed(platform)
            self._maintenance = asyncio.create_task(purge_tombstones_periodically(platform, self._settings))
            if platform.witness_pusher is not None:
                self._pushing = asyncio.create_task(
                    platform.witness_pusher.run(self._settings.witness_interval_seconds)
                )
            self._front = self._build(platform)
        settle_heap()

    async def _seed(self, platform: Platform) -> None:
        """Development mode: the demo data, its key logs cosigned by the development witness before
        the first call, and the credentials file with what a client pins."""
        tenants = await devmode.seed(platform.store, platform.issuer, platform.clock)
        if platform.witness_pusher is not None:
            for tenant in tenants:
                await platform.witness_pusher.push(tenant.tenant_id)
        checkpoints = platform.directory.checkpoints
        path = devmode.write_credentials(
            self._settings.dev_credentials,
            self._settings.base_url,
            tenants,
            log_vkeys=checkpoints.keys.vkeys(),
            witness_vkeys=[witness.verifier.vkey() for witness in platform.witnesses],
            witness_quorum=checkpoints.quorum,
        )
        log.info("development mode: demo data seeded; credentials written to %s", path)

    async def shutdown(self) -> None:
        """Stop the maintenance and the witness pushes, and close the platform this server opened (once)."""
        for task in (self._maintenance, self._pushing):
            if task is not None:
                task.cancel()
        self._maintenance = self._pushing = None
        if self._owns_platform and self._platform is not None:
            platform, self._platform = self._platform, None
            await platform.close()

    def end_streams(self) -> None:
        """At shutdown: end the open streaming calls with `unavailable`, and refuse new ones so."""
        if self._front is not None:
            self._front.streams.end_all()

    def stop(self) -> tuple[int, int]:
        """The server stops: calls in flight finish, their HTTP/1.1 connections closing after
        the answer; open streams end at once. How many of each there were."""
        if self._front is None:
            return 0, 0
        self._front.connections.stopping = True
        streams = len(self._front.streams)
        calls = self._front.observed.in_flight - streams
        self.end_streams()
        return calls, streams

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            assert self._front is not None, "served before start-up"  # servers run the lifespan first
            await self._front.app(scope, receive, send)
        elif scope["type"] == "lifespan":
            await self._serve_lifespan(receive, send)
        # websockets: nothing is served; the server refuses the upgrade

    async def _serve_lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            phase = (await receive())["type"].removeprefix("lifespan.")
            try:
                await (self.startup() if phase == "startup" else self.shutdown())
            except Exception as error:  # noqa: BLE001 # reported to the server, which refuses to start
                await send({"type": f"lifespan.{phase}.failed", "message": str(error)})
                return
            await send({"type": f"lifespan.{phase}.complete"})
            if phase == "shutdown":
                return


# The collector's thresholds once started (Python's are 700, 10, 10). The young generation is
# collected whenever 700 more container objects were made than freed, and whatever is alive then
# (a call in flight, a watch's wait) moves on to the older ones, where only a full collection
# finds it dead; with thousands of open streams, whose state is millions of objects, that is a
# pause that grows with the streams (bench/analysis.md, issue 42). A young generation of 20,000
# lets a burst of work (a change sent to every watch) end before its objects are looked at, and a
# full collection waits for 100 middle ones instead of 10 (and still, as Python requires, for the
# objects moved to the oldest generation since the last one to number a quarter of those it left).
COLLECTOR_THRESHOLDS = (20_000, 10, 100)


def settle_heap() -> None:
    """At the end of start-up, move everything alive (modules, codecs, a seeded
    memory store) out of the garbage collector's generations: it lives as long
    as the process, and a full collection would otherwise walk all of it, a
    pause that grows with the store (the p99 of every call made meanwhile).
    Then collect young objects less often (COLLECTOR_THRESHOLDS)."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*COLLECTOR_THRESHOLDS)


def build_front(
    settings: Settings,
    platform: Platform,
    telemetry: Telemetry,
    vault: VaultService | None = None,
    broker: BrokerService | None = None,
) -> Front:
    """The request path around the platform's services, health and reflection: `front_stack`
    around the routes; each procedure behind `procedure_stack`, a platform service's calls
    through `platform_interceptors`, health's and reflection's through the error mapping only."""
    limit = settings.max_body_bytes
    origin = Origin(settings.public_url, settings.forwarded_allow_ips)
    codecs = [google_protobuf_binary_codec(), CompactJSONCodec()]
    chain = partial(platform_interceptors, platform, telemetry, origin, limit)
    vault_app = VaultServiceASGIApplication(
        vault or VaultServicer(platform.vault, platform.sync, settings.tombstone_retention_seconds),
        interceptors=chain(),
        read_max_bytes=limit,
        # A change reaching many watches is one message: encoded once per codec.
        codecs=[LastEncoded(codec) for codec in codecs],
    )
    broker_app = BrokerServiceASGIApplication(
        broker or BrokerServicer(platform.broker),
        interceptors=chain(CountMintAttempts(platform.broker)),
        read_max_bytes=limit,
        codecs=codecs,
    )
    directory_app = DirectoryServiceASGIApplication(
        DirectoryServicer(platform.directory), interceptors=chain(), read_max_bytes=limit, codecs=codecs
    )
    platform_files = (vault_pb2.DESCRIPTOR, broker_pb2.DESCRIPTOR, directory_pb2.DESCRIPTOR)
    served = [service.full_name for file in platform_files for service in file.services_by_name.values()]
    # Health needs no token and no protocol version: load balancers probe it with whatever they send.
    health_app = HealthASGIApplication(
        HealthServicer(served, platform.readiness),
        interceptors=[ErrorMapping(limit), RevokeTokensInMessages(platform.authenticator)],
        read_max_bytes=limit,
        codecs=codecs,
    )
    codec_names = [codec.name() for codec in codecs]
    unary: dict[str, Route] = {}
    streaming: dict[str, ASGIApp] = {}
    for file, service_app in (
        (vault_pb2.DESCRIPTOR, vault_app),
        (broker_pb2.DESCRIPTOR, broker_app),
        (directory_pb2.DESCRIPTOR, directory_app),
        (health_pb2.DESCRIPTOR, health_app),
    ):
        version_required = () if file is health_pb2.DESCRIPTOR else unary_paths(file)
        stack = procedure_stack(settings, version_required=version_required, codecs=codec_names)
        timed = assemble(stack, service_app)[0]
        for path, methods, stream in _procedures(file):
            if stream:
                streaming[path] = timed
            else:
                unary[path] = Route(timed, methods)
    # The error mapping only: a refused session (a message over the limit, one that does not
    # decode) carries its reason.
    reflection = reflection_routes(
        [*platform_files, health_pb2.DESCRIPTOR], read_max_bytes=limit, interceptors=[ErrorMapping(limit)]
    )
    for path, reflection_app in reflection.items():
        streaming[path] = assemble(procedure_stack(settings, reflection=True), reflection_app)[0]
    tokenless = {path for path, _, stream in _procedures(health_pb2.DESCRIPTOR) if stream} | set(reflection)
    streams = StreamLimits(Dispatch(streaming), stream_budgets(settings, streaming, tokenless))
    routes = unary | {path: Route(streams) for path in streaming}
    front = front_stack(settings, platform, telemetry, origin, routes=routes, streaming=streaming)
    layers = assemble(front, Routes(routes, platform.readiness))
    return Front(layers[0], layer_of(layers, ObserveCalls), streams, layer_of(layers, CloseWhenStopping))


def front_stack(  # noqa: PLR0913 # what the layers are built with
    settings: Settings,
    platform: Platform,
    telemetry: Telemetry,
    origin: Origin,
    *,
    routes: Collection[str],
    streaming: Collection[str],
) -> list[Middleware]:
    """The HTTP front, outermost first: each layer sees a request before those after it, and its
    answer after them (docs/architecture.md says what each does). Inside it, Routes."""
    unread = Unread(
        settings.client_stall_seconds, settings.max_unread_bytes_per_connection, settings.max_unread_bytes_per_worker
    )
    return [
        Middleware(ObserveCalls, metrics=telemetry.metrics, procedures=routes, streams=streaming, client=origin.client),
        Middleware(CloseWhenStopping),
        # Outside every refusal, so that a page sees why it was refused; inside CloseWhenStopping,
        # so that a preflight answered while stopping closes its connection too.
        *([Middleware(Cors, origins=settings.cors_origins)] if settings.cors_origins else []),
        Middleware(ClientGone, unread=unread),
        Middleware(RevokeLeakedTokens, authenticator=platform.authenticator),
        Middleware(RefuseMalformed),
        Middleware(LowercaseCodings),
    ]


def procedure_stack(
    settings: Settings,
    *,
    version_required: Collection[str] = (),
    codecs: Collection[str] = (),
    reflection: bool = False,
) -> list[Middleware]:
    """What a procedure's request passes after Routes (and StreamLimits, for a stream), outermost
    first, before its service's Connect application."""
    # Reflection sessions send requests whenever their client likes: only the first must come in time.
    body = FirstMessage if reflection else RequestBody
    return [
        Middleware(body, timeout_seconds=settings.body_read_timeout_seconds),
        Middleware(RefuseBadProtocolHeaders, version_required=version_required, codecs=codecs),
    ]


def platform_interceptors(
    platform: Platform, telemetry: Telemetry, origin: Origin, max_body_bytes: int, *own: Interceptor
) -> list[Interceptor]:
    """The interceptors of a platform service's calls, outermost first; `own`: the service's own,
    after authentication and before the body is read."""
    return [
        *telemetry.interceptors(),
        # First: its on_end sees every later failure.
        ErrorMapping(max_body_bytes, platform.readiness),
        # Before the token is looked up, which would wait for the store.
        RefuseWhileStoreDown(platform.readiness),
        # Before the body is read, so a bad token answers before a malformed or oversized body.
        Authenticate(platform.authenticator, origin),
        *own,
        # (connectrpc reads and decodes the body here.) Before the field rules: a token in a
        # field is revoked whatever else is wrong with the request.
        RevokeTokensInMessages(platform.authenticator),
        Validate(),
    ]


def stream_budgets(settings: Settings, streaming: Iterable[str], tokenless: Container[str]) -> dict[str, Budget]:
    """Each streaming path's budget: those that need no token (health, reflection) have their own,
    bounded per connection too, so that they cannot take the places of the platform's watches."""
    need_token = Budget("streaming calls", settings.max_streams)
    without_token = Budget(
        "streaming calls that need no token",
        settings.max_streams_without_token,
        settings.max_streams_without_token_per_connection,
    )
    return {path: without_token if path in tokenless else need_token for path in streaming}


def unary_paths(file: FileDescriptor) -> list[str]:
    return [path for path, _, stream in _procedures(file) if not stream]


def _procedures(file: FileDescriptor) -> list[tuple[str, tuple[str, ...], bool]]:
    """Each RPC of a proto file: its path, the HTTP methods it takes (GET too when declared
    `idempotency_level = NO_SIDE_EFFECTS`), and whether it streams."""
    return [
        (
            f"/{service.full_name}/{method.name}",
            GET_OR_POST if method.GetOptions().idempotency_level == _NO_SIDE_EFFECTS else POST_ONLY,
            method.server_streaming or method.client_streaming,
        )
        for service in file.services_by_name.values()
        for method in service.methods
    ]


async def purge_tombstones_periodically(platform: Platform, settings: Settings) -> None:
    """Tombstones are kept for the retention period so offline clients learn of
    deletes; after it they are purged (and answer NOT_FOUND). The same purge
    forgets the records of request ids past their 24 hours. Every worker runs
    this; the purge is idempotent."""
    while True:
        cutoff = platform.clock() - settings.tombstone_retention_seconds
        try:
            purged = await platform.store.purge_tombstones(cutoff, Actor.service(platform.clock()))
        except Exception:
            log.exception("tombstone purge failed; retrying at the next interval")
        else:
            if purged:
                log.info("purged %d tombstone(s) older than %d days", purged, settings.tombstone_retention_days)
        await asyncio.sleep(PURGE_INTERVAL_SECONDS)
