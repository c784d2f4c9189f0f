"""Observability: Prometheus metrics, JSON logs with request and invocation ids, optional tracing.

Domain code records through the module functions re-exported here (no-ops until the app's
lifespan installs a `Metrics` with `set_current`), so nothing below the API layer imports FastAPI.
"""

from app.observability.logging import (
    REQUEST_ID_HEADER,
    ContextFilter,
    JsonFormatter,
    RequestIdMiddleware,
    bind_invocation,
    configure_logging,
    invocation_id_var,
    request_id_var,
)
from app.observability.metrics import (
    Metrics,
    MetricsMiddleware,
    get_metrics,
    invocation_finished,
    invocation_started,
    lease_acquired,
    lease_released,
    metrics_response,
    record_llm_call,
    record_tool_call,
    route_template,
    set_current,
    time_transaction,
)
from app.observability.tracing import fastapi_telemetry, setup_tracing

__all__ = [
    "REQUEST_ID_HEADER",
    "ContextFilter",
    "JsonFormatter",
    "Metrics",
    "MetricsMiddleware",
    "RequestIdMiddleware",
    "bind_invocation",
    "configure_logging",
    "fastapi_telemetry",
    "get_metrics",
    "invocation_finished",
    "invocation_id_var",
    "invocation_started",
    "lease_acquired",
    "lease_released",
    "metrics_response",
    "record_llm_call",
    "record_tool_call",
    "request_id_var",
    "route_template",
    "set_current",
    "setup_tracing",
    "time_transaction",
]
