"""Composition root: builds the one ASGI application from settings."""

from __future__ import annotations

from collections.abc import Iterable

from connectrpc.compat import google_protobuf_binary_codec
from connectrpc.interceptor import Interceptor
from google.protobuf.descriptor import FileDescriptor

from zkplatform.config import ConfigError, Settings
from zkplatform.rpc.broker import BrokerServicer
from zkplatform.rpc.codec import CompactJSONCodec
from zkplatform.rpc.edge import ASGIApp, Edge
from zkplatform.rpc.errors import ErrorMapping
from zkplatform.rpc.protocol import RequireProtocolVersion
from zkplatform.rpc.validation import ValidateRequests
from zkplatform.rpc.vault import VaultServicer
from zkplatform_api.platform.v1 import broker_pb2, vault_pb2
from zkplatform_api.platform.v1.broker_connect import BrokerService, BrokerServiceASGIApplication
from zkplatform_api.platform.v1.vault_connect import VaultService, VaultServiceASGIApplication


def procedures(file: FileDescriptor) -> Iterable[str]:
    """The HTTP paths of every RPC declared in a proto file."""
    for service in file.services_by_name.values():
        for method in service.methods:
            yield f"/{service.full_name}/{method.name}"


def create_app(
    settings: Settings | None = None,
    *,
    vault: VaultService | None = None,
    broker: BrokerService | None = None,
) -> Edge:
    """The ASGI application. Tests may pass their own servicers."""
    settings = Settings.from_env() if settings is None else settings
    if settings.store_url != "memory:":
        msg = f"unsupported store {settings.store_url!r}: this build knows memory:"
        raise ConfigError(msg)
    # Order matters: ErrorMapping starts first so its on_end runs last and sees
    # every error; the metadata interceptors run before the body is parsed.
    interceptors: list[Interceptor] = [ErrorMapping(), RequireProtocolVersion(), ValidateRequests()]
    codecs = [google_protobuf_binary_codec(), CompactJSONCodec()]
    limit = settings.max_body_bytes
    services: list[tuple[FileDescriptor, ASGIApp]] = [
        (
            vault_pb2.DESCRIPTOR,
            VaultServiceASGIApplication(
                vault or VaultServicer(), interceptors=interceptors, read_max_bytes=limit, codecs=codecs
            ),
        ),
        (
            broker_pb2.DESCRIPTOR,
            BrokerServiceASGIApplication(
                broker or BrokerServicer(), interceptors=interceptors, read_max_bytes=limit, codecs=codecs
            ),
        ),
    ]
    routes = {path: app for file, app in services for path in procedures(file)}
    return Edge(routes, max_body_bytes=settings.max_body_bytes)
