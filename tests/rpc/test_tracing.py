"""OpenTelemetry spans, collected with the SDK's in-memory exporter from the real app in-process."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
from connectrpc_otel import OpenTelemetryInterceptor
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from tests.connect import JSON, VAULT_DELETE, headers
from tests.world import BASE_URL, World
from zkplatform.app import create_app
from zkplatform.config import Settings
from zkplatform.observability import tracing
from zkplatform.observability.telemetry import Telemetry
from zkplatform.wiring import Platform

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE_ID}-{PARENT_ID}-01"


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture
async def traced(platform: Platform, world: World, exporter: InMemorySpanExporter) -> AsyncIterator[httpx.AsyncClient]:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    app = create_app(Settings(), platform=platform, telemetry=Telemetry(tracer_provider=provider))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE_URL) as client:
        yield client
    provider.shutdown()


async def delete(client: httpx.AsyncClient, token: str | None, item_id: str = "item-1", **extra: str) -> httpx.Response:
    body = {"vaultId": "acme-private", "itemId": item_id, "baseVersion": "1"}
    return await client.post(VAULT_DELETE, json=body, headers=headers(JSON, token, **extra))


def only_span(exporter: InMemorySpanExporter) -> ReadableSpan:
    [span] = exporter.get_finished_spans()
    return span


async def test_a_call_is_a_server_span_with_procedure_code_and_principal(
    traced: httpx.AsyncClient, world: World, exporter: InMemorySpanExporter
) -> None:
    alice = world.token("alice")
    response = await delete(traced, alice, traceparent=TRACEPARENT)

    span = only_span(exporter)
    assert response.status_code == 200, response.text
    assert span.name == "platform.v1.VaultService/DeleteItem"
    assert span.kind is SpanKind.SERVER
    attributes = dict(span.attributes or {})
    assert attributes["rpc.method"] == "platform.v1.VaultService/DeleteItem"
    assert attributes["rpc.response.status_code"] == "ok"
    assert attributes["enduser.id"] == "alice"
    assert str(attributes["zkplatform.token_id"]).startswith("tok_")
    assert alice not in repr(attributes)


async def test_the_callers_trace_context_is_continued_and_returned(
    traced: httpx.AsyncClient, world: World, exporter: InMemorySpanExporter
) -> None:
    response = await delete(traced, world.token("alice"), traceparent=TRACEPARENT)

    span = only_span(exporter)
    assert span.context is not None
    assert span.parent is not None
    assert f"{span.context.trace_id:032x}" == TRACE_ID
    assert f"{span.parent.span_id:016x}" == PARENT_ID
    assert response.headers["traceparent"] == f"00-{TRACE_ID}-{span.context.span_id:016x}-01"


async def test_a_failed_call_carries_its_code(
    traced: httpx.AsyncClient, world: World, exporter: InMemorySpanExporter
) -> None:
    await delete(traced, world.token("alice"), item_id="no-such-item")
    not_found = only_span(exporter)
    exporter.clear()
    await delete(traced, "zkp_not-a-token")
    refused = only_span(exporter)

    assert dict(not_found.attributes or {})["rpc.response.status_code"] == "not_found"
    assert dict(refused.attributes or {})["rpc.response.status_code"] == "unauthenticated"
    assert "enduser.id" not in dict(refused.attributes or {})
    assert "zkp_not-a-token" not in repr(refused.to_json())


async def test_without_otel_variables_no_sdk_is_set_up_and_no_span_made(
    client: httpx.AsyncClient, world: World
) -> None:
    response = await delete(client, world.token("alice"), traceparent=TRACEPARENT)

    assert tracing.provider_from_env({}) is None
    assert tracing.provider_from_env({"OTEL_SERVICE_NAME": "x", "OTEL_TRACES_EXPORTER": "none"}) is None
    assert not any(isinstance(i, OpenTelemetryInterceptor) for i in Telemetry.for_server(metrics=False).interceptors())
    assert "traceparent" not in response.headers


def test_the_standard_variables_switch_tracing_on() -> None:
    assert tracing.exporter_names({"OTEL_TRACES_EXPORTER": "console"}) == ["console"]
    assert tracing.exporter_names({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}) == ["otlp"]
    provider = tracing.provider_from_env({"OTEL_TRACES_EXPORTER": "otlp", "OTEL_SERVICE_NAME": "vault-eu"})
    assert provider is not None
    try:
        assert provider.resource.attributes["service.name"] == "vault-eu"
    finally:
        provider.shutdown()


def test_an_exporter_not_installed_is_named() -> None:
    with pytest.raises(tracing.TracingConfigError, match="'zipkin'"):
        tracing.check_env({"OTEL_TRACES_EXPORTER": "zipkin"})
