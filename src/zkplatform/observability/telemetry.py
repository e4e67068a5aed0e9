"""What a server process measures: the metrics and the tracer provider, each possibly off."""

from __future__ import annotations

from dataclasses import dataclass

from connectrpc.interceptor import Interceptor
from opentelemetry.trace import TracerProvider
from prometheus_client import REGISTRY

from zkplatform.observability import tracing
from zkplatform.observability.interceptor import SpanOutcome
from zkplatform.observability.metrics import Metrics, install


@dataclass(frozen=True, slots=True)
class Telemetry:
    metrics: Metrics | None = None
    tracer_provider: TracerProvider | None = None

    @classmethod
    def for_server(cls, *, metrics: bool) -> Telemetry:
        """A server process's: metrics on the process's default registry (which the
        metrics port serves, or whose files the parent adds up), tracing as OTEL_* says."""
        return cls(Metrics(REGISTRY) if metrics else None, tracing.provider_from_env())

    def interceptors(self) -> list[Interceptor]:
        """The interceptors that come before the error mapping, with tracing on: the span first, so
        that it encloses everything, then what writes the outcome onto it. None without
        tracing: the call's record and its metrics need no interceptor (calls.py)."""
        if self.tracer_provider is None:
            return []
        return [tracing.interceptor(self.tracer_provider), SpanOutcome()]

    def install(self) -> None:
        """Let the stores' probes report to these metrics."""
        install(self.metrics)
