"""Prometheus metrics: HTTP series labelled by route template, engine hooks, the exposition."""

from collections.abc import Iterator

import pytest
from fastapi import APIRouter, FastAPI, HTTPException, Request, Response
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from app.api.metrics import metrics_response
from app.api.middleware import MetricsMiddleware
from app.observability.metrics import (
    UNMATCHED_ROUTE,
    Metrics,
    get_metrics,
    invocation_finished,
    invocation_started,
    lease_acquired,
    lease_released,
    record_llm_call,
    record_tool_call,
    set_current,
    time_transaction,
)

SESSION_ROUTE = "/apps/{app_name}/users/{user_id}/sessions/{session_id}"


def build_app(metrics: Metrics) -> FastAPI:
    """A throwaway app with a prefixed router, a nested router, failing routes and /metrics."""
    sessions = APIRouter(prefix="/apps/{app_name}/users/{user_id}/sessions")

    @sessions.get("/{session_id}")
    async def get_session(app_name: str, user_id: str, session_id: str) -> dict[str, str]:
        return {"app": app_name, "user": user_id, "session": session_id}

    inner = APIRouter(prefix="/inner")

    @inner.get("/items/{item_id}")
    async def get_item(item_id: str) -> dict[str, str]:
        return {"item": item_id}

    outer = APIRouter(prefix="/outer")
    outer.include_router(inner)

    app = FastAPI()
    app.include_router(sessions)
    app.include_router(outer)

    @app.get("/boom")
    async def boom() -> None:
        raise RuntimeError("unexpected")

    @app.get("/teapot")
    async def teapot() -> None:
        raise HTTPException(status_code=418)

    @app.get("/metrics")
    async def expose(request: Request) -> Response:
        return metrics_response(request.app.state.metrics)

    app.state.metrics = metrics
    app.add_middleware(MetricsMiddleware, metrics=metrics)
    return app


@pytest.fixture
def metrics() -> Metrics:
    return Metrics()


@pytest.fixture
def client(metrics: Metrics) -> Iterator[TestClient]:
    with TestClient(build_app(metrics), raise_server_exceptions=False) as test_client:
        yield test_client


@pytest.fixture
def current(metrics: Metrics) -> Iterator[Metrics]:
    previous = set_current(metrics)
    try:
        yield metrics
    finally:
        set_current(previous)


def requests_total(metrics: Metrics, route: str, status: str, method: str = "GET") -> float | None:
    return metrics.registry.get_sample_value(
        "agentd_http_requests_total", {"method": method, "route": route, "status": status}
    )


def test_requests_are_labelled_with_the_route_template_not_the_path(
    client: TestClient, metrics: Metrics
) -> None:
    assert client.get("/apps/a/users/u/sessions/s1").status_code == 200
    assert client.get("/apps/b/users/v/sessions/s2").status_code == 200

    assert requests_total(metrics, SESSION_ROUTE, "200") == 2
    exposition = metrics.exposition().decode()
    assert "/apps/a/users/u/sessions/s1" not in exposition
    assert (
        metrics.registry.get_sample_value(
            "agentd_http_request_duration_seconds_count",
            {"method": "GET", "route": SESSION_ROUTE},
        )
        == 2
    )


def test_nested_router_prefixes_are_part_of_the_route_template(
    client: TestClient, metrics: Metrics
) -> None:
    assert client.get("/outer/inner/items/42").status_code == 200

    assert requests_total(metrics, "/outer/inner/items/{item_id}", "200") == 1


def test_paths_no_route_matched_share_the_unmatched_label(
    client: TestClient, metrics: Metrics
) -> None:
    assert client.get("/no/such/path").status_code == 404
    assert client.get("/another/missing/path").status_code == 404

    assert requests_total(metrics, UNMATCHED_ROUTE, "404") == 2


def test_a_wrong_method_is_counted_under_the_route_it_partly_matched(
    client: TestClient, metrics: Metrics
) -> None:
    assert client.delete("/apps/a/users/u/sessions/s").status_code == 405

    assert requests_total(metrics, SESSION_ROUTE, "405", method="DELETE") == 1


def test_an_unhandled_exception_is_counted_as_a_500(client: TestClient, metrics: Metrics) -> None:
    assert client.get("/boom").status_code == 500

    assert requests_total(metrics, "/boom", "500") == 1
    assert (
        metrics.registry.get_sample_value(
            "agentd_http_request_duration_seconds_count", {"method": "GET", "route": "/boom"}
        )
        == 1
    )


def test_an_http_exception_is_counted_with_its_status(client: TestClient, metrics: Metrics) -> None:
    assert client.get("/teapot").status_code == 418

    assert requests_total(metrics, "/teapot", "418") == 1


def test_the_exposition_parses_and_names_every_agentd_series(
    client: TestClient, current: Metrics
) -> None:
    client.get("/apps/a/users/u/sessions/s")
    invocation_started("demo")
    invocation_finished("demo", "completed")
    record_llm_call("demo", "gemini-2.5-flash")
    record_tool_call("demo", "get_weather", "ok")
    with time_transaction("append_event"):
        pass
    lease_acquired()

    response = client.get("/metrics")

    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    families = list(text_string_to_metric_families(response.text))
    samples = {sample.name for family in families for sample in family.samples}
    assert {
        "agentd_http_requests_total",
        "agentd_http_request_duration_seconds_bucket",
        "agentd_invocations_total",
        "agentd_invocations_active",
        "agentd_llm_calls_total",
        "agentd_tool_calls_total",
        "agentd_db_transaction_seconds_bucket",
        "agentd_session_leases_active",
    } <= samples
    assert current.registry.get_sample_value("agentd_session_leases_active") == 1


def test_an_ended_invocation_leaves_the_active_gauge_and_counts_its_outcome(
    current: Metrics,
) -> None:
    invocation_started("demo")
    invocation_started("demo")
    invocation_finished("demo", "failed")

    assert current.registry.get_sample_value("agentd_invocations_active", {"app": "demo"}) == 1
    assert (
        current.registry.get_sample_value(
            "agentd_invocations_total", {"app": "demo", "status": "failed"}
        )
        == 1
    )


def test_released_leases_leave_the_lease_gauge(current: Metrics) -> None:
    lease_acquired()
    lease_acquired()
    lease_released()

    assert current.registry.get_sample_value("agentd_session_leases_active") == 1


def test_tool_calls_are_counted_by_outcome(current: Metrics) -> None:
    record_tool_call("demo", "search", "ok")
    record_tool_call("demo", "search", "error")
    record_tool_call("demo", "search", "error")

    labels = {"app": "demo", "tool": "search"}
    value = current.registry.get_sample_value
    assert value("agentd_tool_calls_total", {**labels, "outcome": "ok"}) == 1
    assert value("agentd_tool_calls_total", {**labels, "outcome": "error"}) == 2


def test_a_failed_transaction_is_timed_too(current: Metrics) -> None:
    with pytest.raises(ValueError, match="rolled back"), time_transaction("create_session"):
        raise ValueError("rolled back")

    assert (
        current.registry.get_sample_value(
            "agentd_db_transaction_seconds_count", {"operation": "create_session"}
        )
        == 1
    )


def test_recording_without_current_metrics_does_nothing(metrics: Metrics) -> None:
    previous = set_current(None)
    try:
        assert get_metrics() is None
        invocation_started("demo")
        invocation_finished("demo", "cancelled")
        record_llm_call("demo", "model")
        record_tool_call("demo", "tool", "error")
        lease_acquired()
        lease_released()
        with time_transaction("append_event"):
            pass
    finally:
        set_current(previous)

    assert metrics.registry.get_sample_value("agentd_session_leases_active") == 0


def test_each_metrics_has_its_own_registry() -> None:
    first, second = Metrics(), Metrics()

    first.http_requests.labels(method="GET", route="/", status="200").inc()

    assert (
        second.registry.get_sample_value(
            "agentd_http_requests_total", {"method": "GET", "route": "/", "status": "200"}
        )
        is None
    )
