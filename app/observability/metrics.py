"""Prometheus metrics: the `Metrics` registry and the engine's recording hooks.

Built on `prometheus-client`, the Prometheus project's own Python client: it owns the metric
types, label handling and the exposition format, so nothing here formats text by hand. Each
`Metrics` has its own `CollectorRegistry` (not the process-wide default), so several apps built in
one test process never clash over series names.

HTTP series are labelled with the route *template* (`/apps/{app_name}/...`), never the raw path,
so the number of series stays bounded; requests no route matched share the label "unmatched".
The ASGI middleware that records them is `app.api.middleware.MetricsMiddleware` and `GET /metrics`
is served by `app.api.metrics`, so this module never loads the web framework.

Code deep in the engine (agents, tools, the session service) records through module functions
(`record_llm_call`, `time_transaction`, ...) that write to the process's current `Metrics`, set
by the app's lifespan with `set_current`; with none set they do nothing, so libraries, scripts
and unit tests need no metrics at all. The current `Metrics` is process-wide rather than a
ContextVar because invocations run in tasks that do not inherit the lifespan's context.

With `agentd serve --workers N` (N > 1) the workers share their numbers through
prometheus-client's multiprocess mode: `serve` points PROMETHEUS_MULTIPROC_DIR at a fresh
folder before it starts them, each worker's series are kept there, and `/metrics` from any of
them answers the sum over all (gauges of what is active: summed over the live workers; process
and GC series: per process, not collected, as the library cannot merge them).
"""

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Literal

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    multiprocess,
)
from prometheus_client.gc_collector import GCCollector
from prometheus_client.platform_collector import PlatformCollector
from prometheus_client.process_collector import ProcessCollector

ToolOutcome = Literal["ok", "error"]

#: The `route` label of requests that no route matched (404s, stray redirects).
UNMATCHED_ROUTE = "unmatched"

#: nginx's "client closed request": the request ended (cancelled) before any response started.
CLIENT_CLOSED_REQUEST = 499

# Database transactions are mostly single-digit milliseconds; the defaults start too coarse.
_DB_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class Metrics:
    """Every agentd series, in a registry of its own."""

    def __init__(self, *, process_metrics: bool = True) -> None:
        self.registry = CollectorRegistry()
        self.shared = shared_directory() is not None
        if process_metrics and not self.shared:
            # process_*, python_info and python_gc_*, as the default registry has
            ProcessCollector(registry=self.registry)
            PlatformCollector(registry=self.registry)
            GCCollector(registry=self.registry)
        self.http_requests = Counter(
            "agentd_http_requests_total",
            "HTTP requests answered, by route template and status code.",
            ["method", "route", "status"],
            registry=self.registry,
        )
        self.http_request_duration = Histogram(
            "agentd_http_request_duration_seconds",
            "Time from request start to the end of the response body (whole stream for SSE).",
            ["method", "route"],
            registry=self.registry,
        )
        self.invocations = Counter(
            "agentd_invocations_total",
            "Invocations that ended on this replica, by outcome.",
            ["app", "status"],
            registry=self.registry,
        )
        self.invocations_active = Gauge(
            "agentd_invocations_active",
            "Invocations running (or waiting for their session) on this replica.",
            ["app"],
            registry=self.registry,
            multiprocess_mode="livesum",
        )
        self.llm_calls = Counter(
            "agentd_llm_calls_total",
            "Model calls made (calls answered by a before-model callback are not counted).",
            ["app", "model"],
            registry=self.registry,
        )
        self.tool_calls = Counter(
            "agentd_tool_calls_total",
            "Tool runs, by outcome (error: the tool raised, even if a callback recovered).",
            ["app", "tool", "outcome"],
            registry=self.registry,
        )
        self.db_transaction_duration = Histogram(
            "agentd_db_transaction_seconds",
            "Duration of database transactions, by operation.",
            ["operation"],
            buckets=_DB_BUCKETS,
            registry=self.registry,
        )
        self._transaction_children: dict[str, Any] = {}
        # Keys are route templates (never raw paths), so this stays as small as the series.
        self._request_children: dict[tuple[str, str, int], tuple[Any, Any]] = {}
        self.session_leases_active = Gauge(
            "agentd_session_leases_active",
            "Session leases this replica holds.",
            registry=self.registry,
            multiprocess_mode="livesum",
        )
        self.enqueue_wakeups = Counter(
            "agentd_enqueue_wakeups_total",
            "Times a queued run tried its busy session again, by what prompted it: release (a "
            "run of this process ended), notification (another process's ended), "
            "reconnect (notifications may have been missed), poll (nothing did in time).",
            ["cause"],
            registry=self.registry,
        )

        self.queue_claims = Counter(
            "agentd_queue_claims_total",
            "Invocations this process took from the queue, by kind: queued (never ran: queued "
            "for workers) or takeover (its owner died or handed it back; resumed from its last "
            "committed event).",
            ["kind"],
            registry=self.registry,
        )
        self.queue_claim_latency = Histogram(
            "agentd_queue_claim_latency_seconds",
            "From an invocation's queueing for workers to a process taking it.",
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
            registry=self.registry,
        )
        self.queue_attempts = Histogram(
            "agentd_queue_attempts",
            "The attempt number of the invocations this process took from the queue.",
            buckets=(1, 2, 3, 4, 5, 10),
            registry=self.registry,
        )
        self.follow_wakeups = Counter(
            "agentd_follow_wakeups_total",
            "Times a follower of a run in another process read new events, by what prompted "
            "it: notification (the running process published events) or timer (none came in "
            "time).",
            ["cause"],
            registry=self.registry,
        )
        self.queue_depth = Gauge(
            "agentd_queue_depth",
            "Invocations waiting to be taken from the queue, as this process last saw them "
            "(it looks at most 4 x its free slots ahead).",
            registry=self.registry,
            multiprocess_mode="livemax",
        )
        self.fenced_writes = Counter(
            "agentd_fenced_writes_total",
            "Writes of a run dropped because another attempt held its invocation's lease "
            "(fencing), by write: event, status, heartbeat, hand_back.",
            ["write"],
            registry=self.registry,
        )

        self.overloads = Counter(
            "agentd_invocations_refused_total",
            "New invocations refused with 503 `overloaded`: this process held "
            "AGENTD_MAX_INFLIGHT_INVOCATIONS runs already.",
            registry=self.registry,
        )

    def observe_request(self, method: str, route: str, status: int, seconds: float) -> None:
        """Record one answered HTTP request."""
        key = (method, route, status)
        children = self._request_children.get(key)
        if children is None:  # labels() takes a lock and builds a key per call: once per series
            children = (
                self.http_requests.labels(method=method, route=route, status=str(status)),
                self.http_request_duration.labels(method=method, route=route),
            )
            self._request_children[key] = children
        children[0].inc()
        children[1].observe(seconds)

    @contextmanager
    def time_transaction(self, operation: str) -> Iterator[None]:
        """Time the enclosed block as one `operation` transaction (failed ones included)."""
        start = time.perf_counter()
        try:
            yield
        finally:
            child = self._transaction_children.get(operation)
            if child is None:  # labels() costs a lock and a tuple key per call: look up once
                child = self.db_transaction_duration.labels(operation=operation)
                self._transaction_children[operation] = child
            child.observe(time.perf_counter() - start)

    def exposition(self) -> bytes:
        """The registry in the Prometheus text format: with several workers, every worker's
        series summed (multiprocess mode)."""
        directory = shared_directory()
        if directory is None:
            return generate_latest(self.registry)
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry, path=directory)  # type: ignore[no-untyped-call]
        return generate_latest(registry)


#: The environment variable prometheus-client's multiprocess mode reads (at import).
MULTIPROCESS_DIRECTORY = "PROMETHEUS_MULTIPROC_DIR"


def shared_directory() -> str | None:
    """The folder the worker processes share their series in, or None (one process)."""
    return os.environ.get(MULTIPROCESS_DIRECTORY) or None


def process_exited(pid: int) -> None:
    """Drop an exited worker's share of the live gauges (its counters stay counted)."""
    directory = shared_directory()
    if directory is not None:
        multiprocess.mark_process_dead(pid, directory)  # type: ignore[no-untyped-call]


# -- the process's current Metrics, for code that cannot see the app ----------------------

_current: Metrics | None = None


def set_current(metrics: Metrics | None) -> Metrics | None:
    """Make `metrics` the one the recording functions write to; return the previous one."""
    global _current
    previous, _current = _current, metrics
    return previous


def get_metrics() -> Metrics | None:
    """The current Metrics, or None when nothing records."""
    return _current


def record_llm_call(app: str, model: str) -> None:
    """Count one model call of `app` to `model`."""
    if _current is not None:
        _current.llm_calls.labels(app=app, model=model).inc()


def record_tool_call(app: str, tool: str, outcome: ToolOutcome) -> None:
    """Count one run of `tool` by `app`."""
    if _current is not None:
        _current.tool_calls.labels(app=app, tool=tool, outcome=outcome).inc()


def invocation_started(app: str) -> None:
    """Count an invocation of `app` as active."""
    if _current is not None:
        _current.invocations_active.labels(app=app).inc()


def invocation_finished(app: str, status: str) -> None:
    """Count an invocation of `app` as ended with `status`: completed, failed or cancelled."""
    if _current is not None:
        _current.invocations_active.labels(app=app).dec()
        _current.invocations.labels(app=app, status=status).inc()


def lease_acquired() -> None:
    """Count one more session lease held by this replica."""
    if _current is not None:
        _current.session_leases_active.inc()


def lease_released() -> None:
    """Count one session lease fewer held by this replica."""
    if _current is not None:
        _current.session_leases_active.dec()


def enqueue_woken(cause: str) -> None:
    """Count a queued run trying its session again, prompted by `cause`."""
    if _current is not None:
        _current.enqueue_wakeups.labels(cause=cause).inc()


def queue_claimed(kind: str, attempt: int, waited: float | None) -> None:
    """Count an invocation taken from the queue (`waited`: since it was queued, if it never
    ran)."""
    if _current is not None:
        _current.queue_claims.labels(kind=kind).inc()
        _current.queue_attempts.observe(attempt)
        if waited is not None:
            _current.queue_claim_latency.observe(max(waited, 0.0))


def follow_woken(cause: str) -> None:
    """Count a follower of a remote run reading on, prompted by `cause`."""
    if _current is not None:
        _current.follow_wakeups.labels(cause=cause).inc()


def queue_depth(depth: int) -> None:
    """Record how many invocations the last claim saw waiting."""
    if _current is not None:
        _current.queue_depth.set(depth)


def fenced_write(write: str) -> None:
    """Count a run's write that its fence refused (`write`: event, status, heartbeat, ...)."""
    if _current is not None:
        _current.fenced_writes.labels(write=write).inc()


def invocation_refused() -> None:
    """Count a new invocation refused because this process runs as many as it may."""
    if _current is not None:
        _current.overloads.inc()


@contextmanager
def time_transaction(operation: str) -> Iterator[None]:
    """Time the enclosed block as one `operation` transaction in the current Metrics, if any."""
    metrics = _current
    if metrics is None:
        yield
        return
    with metrics.time_transaction(operation):
        yield
