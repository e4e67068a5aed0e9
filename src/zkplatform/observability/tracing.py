"""OpenTelemetry tracing, set up from the standard OTEL_* environment variables.

Tracing is on when OTEL_TRACES_EXPORTER names an exporter other than `none`,
or when an OTLP endpoint is given (OTEL_EXPORTER_OTLP_ENDPOINT or
OTEL_EXPORTER_OTLP_TRACES_ENDPOINT; the exporter is then `otlp`). Otherwise no
SDK is set up and no interceptor mounted: a call creates no span at all. The
SDK reads the rest itself: OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES, the
exporter's endpoint, headers and timeout, OTEL_TRACES_SAMPLER, OTEL_BSP_*, and
OTEL_PROPAGATORS (W3C trace context and baggage by default).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from importlib.metadata import EntryPoint, entry_points

from connectrpc_otel import OpenTelemetryInterceptor
from opentelemetry.metrics import NoOpMeterProvider
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
from opentelemetry.trace import TracerProvider as AnyTracerProvider

log = logging.getLogger(__name__)

_DEFAULT_SERVICE_NAME = "zkplatform"


class TracingConfigError(ValueError):
    """OTEL_* settings that cannot be used; the message says which and why."""


def exporter_names(env: Mapping[str, str]) -> list[str]:
    """The trace exporters the environment asks for (none: tracing is off)."""
    raw = env.get("OTEL_TRACES_EXPORTER", "").strip()
    if raw:
        names = [name.strip() for name in raw.split(",") if name.strip()]
        return [] if names == ["none"] else names
    if env.get("OTEL_EXPORTER_OTLP_ENDPOINT") or env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        return ["otlp"]
    return []


def provider_from_env(env: Mapping[str, str] | None = None) -> TracerProvider | None:
    """A tracer provider exporting where the environment says, or None when it asks for no tracing."""
    env = os.environ if env is None else env
    names = exporter_names(env)
    if not names:
        return None
    # The SDK reads OTEL_RESOURCE_ATTRIBUTES itself; the service is named here so that it is never
    # the SDK's "unknown_service".
    named = "service.name=" in env.get("OTEL_RESOURCE_ATTRIBUTES", "")
    service = env.get("OTEL_SERVICE_NAME") or (None if named else _DEFAULT_SERVICE_NAME)
    provider = TracerProvider(resource=Resource.create({} if service is None else {"service.name": service}))
    for name in names:
        provider.add_span_processor(BatchSpanProcessor(_exporter(name)))
    log.info("tracing on: exporting spans with %s", ", ".join(names))
    return provider


# The OTLP exporter installed is the HTTP/protobuf one: `otlp` means it.
_ALIASES = {"otlp": "otlp_proto_http"}


def _exporter(name: str) -> SpanExporter:
    """The exporter registered under `name` (`console`; `otlp`, that is `otlp_proto_http`)."""
    exporter: SpanExporter = _entry_point(name).load()()
    return exporter


def _entry_point(name: str) -> EntryPoint:
    found = entry_points(group="opentelemetry_traces_exporter", name=_ALIASES.get(name, name))
    if not found:
        known = sorted({"otlp", *(point.name for point in entry_points(group="opentelemetry_traces_exporter"))})
        msg = f"OTEL_TRACES_EXPORTER names {name!r}, which is not installed (known: {', '.join(known)})"
        raise TracingConfigError(msg)
    return next(iter(found))


def check_env(env: Mapping[str, str] | None = None) -> None:
    """TracingConfigError when OTEL_TRACES_EXPORTER names an exporter that is not installed."""
    for name in exporter_names(os.environ if env is None else env):
        _entry_point(name)


def interceptor(provider: AnyTracerProvider) -> OpenTelemetryInterceptor:
    """A server span per RPC (connectrpc-otel), child of the caller's traceparent when it sends one."""
    return OpenTelemetryInterceptor(tracer_provider=provider, meter_provider=NoOpMeterProvider())
