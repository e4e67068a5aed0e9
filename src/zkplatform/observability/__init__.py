"""What the server tells its operator: metrics, traces and the access log.

- calls.py: the one record of each HTTP call and the outermost middleware that
  keeps it (procedure, protocol, final code, principal, request id), ending in
  an access line and metrics; the error mapping (rpc/errors.py) tells it the
  final code, authentication (rpc/interceptors/auth.py) the caller's ids;
- interceptor.py: with tracing on, the metadata interceptor that writes the
  final code and the principal onto the call's span;
- metrics.py: the Prometheus series and their own listener;
- probes.py: the hooks the stores call, which cost nothing when metrics are off;
- tracing.py: OpenTelemetry, set up from the standard OTEL_* variables only;
- logs.py: the text and JSON log formats.
"""
