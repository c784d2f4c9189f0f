"""Observability: Prometheus metrics, JSON logs with request and invocation ids, optional tracing.

Domain code records through the module functions re-exported here (no-ops until the app's
lifespan installs a `Metrics` with `set_current`), so nothing below the API layer imports FastAPI.
The ASGI middlewares that feed this package per request (request ids, HTTP metrics) live in
`app.api.middleware`, so it never loads the web framework itself.
"""

from app.observability.logging import (
    REQUEST_ID_HEADER,
    ContextFilter,
    JsonFormatter,
    bind_invocation,
    configure_logging,
    invocation_id_var,
    request_id_var,
)
from app.observability.metrics import (
    Metrics,
    enqueue_woken,
    get_metrics,
    invocation_finished,
    invocation_started,
    lease_acquired,
    lease_released,
    process_exited,
    record_llm_call,
    record_tool_call,
    set_current,
    time_transaction,
)
from app.observability.tracing import fastapi_telemetry, setup_tracing

__all__ = [
    "REQUEST_ID_HEADER",
    "ContextFilter",
    "JsonFormatter",
    "Metrics",
    "bind_invocation",
    "configure_logging",
    "enqueue_woken",
    "fastapi_telemetry",
    "get_metrics",
    "invocation_finished",
    "invocation_id_var",
    "invocation_started",
    "lease_acquired",
    "lease_released",
    "process_exited",
    "record_llm_call",
    "record_tool_call",
    "request_id_var",
    "set_current",
    "setup_tracing",
    "time_transaction",
]
