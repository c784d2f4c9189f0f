"""Optional OpenTelemetry tracing: on only when an OTLP endpoint is configured and the SDK is there.

OpenTelemetry is not a dependency of agentd (hence the `type: ignore`s on its optional imports).
`setup_tracing` does nothing unless OTEL_EXPORTER_OTLP_ENDPOINT is set *and* `opentelemetry-sdk`
plus `opentelemetry-exporter-otlp-proto-http` are importable; then it installs a global tracer
provider that batches spans to that endpoint (the exporter reads the standard OTEL_* variables).

Which spans: FastAPI >= 0.16x traces requests natively through the global tracer provider, so a
provider is all it needs (adding `opentelemetry-instrumentation-fastapi` too would only make FastAPI
step aside for it). On an older FastAPI without `fastapi.telemetry`, the contrib instrumentation
is used when importable.

Independently of this, every run records its invocation, agent, model and tool spans in a small
in-memory store for ADK's dev UI Trace pane (app.observability.spans, filled by
app.plugins.span_recorder): that needs no OpenTelemetry SDK and no endpoint.
"""

import importlib.util
import logging
import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the app is only passed through; domain code importing this stays web-free
    from fastapi import FastAPI

logger = logging.getLogger("agentd.tracing")

ENDPOINT_VARIABLE = "OTEL_EXPORTER_OTLP_ENDPOINT"


def fastapi_telemetry() -> dict[str, bool]:
    """`FastAPI(telemetry=...)`: FastAPI's native OpenTelemetry hooks off unless tracing is wanted.

    With them on, every request asks the global tracer, meter and logger providers whether they
    are configured and collects per-operation data: work for nothing when no exporter is set.
    """
    if os.environ.get(ENDPOINT_VARIABLE):
        return {}
    return {"tracing": False, "metrics": False, "logs": False, "operation_spans": False}


def setup_tracing(app: "FastAPI") -> None:
    """Export traces of `app` over OTLP if configured and possible; otherwise do nothing."""
    if not os.environ.get(ENDPOINT_VARIABLE):
        logger.info("tracing off: %s is not set", ENDPOINT_VARIABLE)
        return
    try:
        from opentelemetry import trace
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter  # type: ignore[import-not-found, unused-ignore]
        from opentelemetry.sdk.resources import Resource  # type: ignore[import-not-found, unused-ignore]
        from opentelemetry.sdk.trace import TracerProvider  # type: ignore[import-not-found, unused-ignore]
        from opentelemetry.sdk.trace.export import BatchSpanProcessor  # type: ignore[import-not-found, unused-ignore]
    except ImportError:
        logger.info(
            "tracing off: %s is set but opentelemetry-sdk and "
            "opentelemetry-exporter-otlp-proto-http are not installed",
            ENDPOINT_VARIABLE,
        )
        return
    if isinstance(trace.get_tracer_provider(), TracerProvider):
        logger.info("tracing on: reusing the tracer provider already installed")
    else:
        service = os.environ.get("OTEL_SERVICE_NAME", "agentd")
        provider = TracerProvider(resource=Resource.create({"service.name": service}))
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
        trace.set_tracer_provider(provider)
        logger.info("tracing on: exporting spans to %s", os.environ[ENDPOINT_VARIABLE])
    if importlib.util.find_spec("fastapi.telemetry") is not None:
        return  # FastAPI traces natively through the global provider
    try:
        from opentelemetry.instrumentation.fastapi import FastAPIInstrumentor  # type: ignore[import-not-found, unused-ignore]
    except ImportError:
        logger.info("tracing: no request spans (install opentelemetry-instrumentation-fastapi)")
        return
    FastAPIInstrumentor.instrument_app(app)
