"""/metrics after a run exposes every documented series; logs are JSON with request ids."""

import gc
import json
from pathlib import Path

import httpx
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from app.main import create_app
from app.settings import Settings
from tests.live_server import LiveServer, build_agents_dir
from tests.problems import assert_problem

QUESTION = {"role": "user", "parts": [{"text": "What is the capital of France?"}]}
SERIES = {
    "agentd_http_requests",
    "agentd_http_request_duration_seconds",
    "agentd_invocations",
    "agentd_invocations_active",
    "agentd_llm_calls",
    "agentd_tool_calls",
    "agentd_db_transaction_seconds",
    "agentd_session_leases_active",
}


def test_metrics_expose_http_invocation_model_tool_db_and_lease_series(
    api_settings: Settings,
) -> None:
    with TestClient(create_app(api_settings)) as client:
        base = "/apps/capital_agent/users/u/sessions"
        client.post(base, json={"sessionId": "s"})
        assert (
            client.post(f"{base}/s/invocations", json={"newMessage": QUESTION}).status_code == 200
        )
        response = client.get("/metrics")
    assert response.status_code == 200
    families = {f.name: f for f in text_string_to_metric_families(response.text)}
    assert SERIES <= set(families)

    def value(family: str, sample: str, **labels: str) -> float:
        return sum(
            s.value
            for s in families[family].samples
            if s.name == sample and all(s.labels.get(k) == v for k, v in labels.items())
        )

    route = "/apps/{app_name}/users/{user_id}/sessions/{session_id}/invocations"
    assert (
        value("agentd_http_requests", "agentd_http_requests_total", route=route, status="200") == 1
    )
    assert (
        value(
            "agentd_invocations",
            "agentd_invocations_total",
            app="capital_agent",
            status="completed",
        )
        == 1
    )
    assert value("agentd_llm_calls", "agentd_llm_calls_total", app="capital_agent") == 2
    assert (
        value("agentd_tool_calls", "agentd_tool_calls_total", tool="get_capital_city", outcome="ok")
        == 1
    )
    assert (
        value(
            "agentd_db_transaction_seconds",
            "agentd_db_transaction_seconds_count",
            operation="append_event",
        )
        == 4
    )
    assert value("agentd_session_leases_active", "agentd_session_leases_active") == 0
    # Raw paths never become labels: one series per route template.
    assert all(
        "/users/u/" not in (s.labels.get("route") or "")
        for s in families["agentd_http_requests"].samples
    )


def test_metrics_are_admin_only_when_authentication_is_on(api_settings: Settings) -> None:
    settings = api_settings.model_copy(update={"auth": "api_key"})
    with TestClient(create_app(settings)) as client:
        assert_problem(client.get("/metrics"), 401, "unauthenticated")


def test_server_logs_are_json_lines_with_the_request_id(tmp_path: Path) -> None:
    server = LiveServer(
        tmp_path,
        {
            "AGENTD_DATA_DIR": str(tmp_path / "data"),
            "AGENTD_AGENTS_DIR": str(build_agents_dir(tmp_path / "agents")),
        },
    ).start()
    try:
        response = httpx.get(f"{server.url}/list-apps", headers={"X-Request-ID": "req-42"})
        assert response.headers["x-request-id"] == "req-42"
        generated = httpx.get(f"{server.url}/health").headers["x-request-id"]
        assert len(generated) >= 16
    finally:
        server.stop()
    records = [
        json.loads(line) for line in server.log.read_text().splitlines() if line.startswith("{")
    ]
    assert any(r.get("request_id") == "req-42" and "/list-apps" in r["message"] for r in records)
    assert all({"time", "level", "logger", "message"} <= set(r) for r in records)


def test_a_serving_app_keeps_its_startup_objects_out_of_the_cyclic_gc(
    api_settings: Settings,
) -> None:
    # A full collection over a started server's ~220,000 objects pauses every request ~140 ms.
    with TestClient(create_app(api_settings)) as client:
        assert client.get("/health").status_code == 200
        frozen = gc.get_freeze_count()
        assert frozen > 10_000
    # Shut down, the app hands everything back so its leftovers can be collected.
    assert gc.get_freeze_count() == 0
