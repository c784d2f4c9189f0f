"""ADK dev UI's Trace pane over HTTP: `/dev/apps/{app}/debug/trace/session/{sid}` and
`/debug/trace/{event_id}` in google-adk 2.13's shapes (`cli/dev_server.py`, `WebUiSpan` in
`telemetry/_web_ui.py`), from the spans agentd records while it runs the offline capital app.
"""

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.live_server import LiveServer, build_agents_dir

APP = "capital_agent"
WEB_UI_SPAN_KEYS = {
    "name",
    "start_time",
    "end_time",
    "trace_id",
    "span_id",
    "parent_span_id",
    "attributes",
    "logs",
}


def _server(root: Path, auth: str, **extra: str) -> LiveServer:
    env = {
        "AGENTD_DATA_DIR": str(root / "data"),
        "AGENTD_AGENTS_DIR": str(build_agents_dir(root / "agents")),
        "AGENTD_AUTH": auth,
        **extra,
    }
    return LiveServer(root / "server", env).start()


@pytest.fixture(scope="module")
def http(tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    """A client of a server (auth off) on the shipped apps."""
    server = _server(tmp_path_factory.mktemp("dev-trace"), "none")
    try:
        with httpx.Client(base_url=server.url, timeout=30) as client:
            yield client
    finally:
        server.stop()


def _ask_capital(http: httpx.Client, sid: str) -> list[dict[str, Any]]:
    created = http.post(f"/apps/{APP}/users/u1/sessions", json={"sessionId": sid})
    assert created.status_code == 201, created.text
    body = {
        "appName": APP,
        "userId": "u1",
        "sessionId": sid,
        "newMessage": {"role": "user", "parts": [{"text": "What is the capital of France?"}]},
    }
    response = http.post("/run", json=body)
    assert response.status_code == 200, response.text
    events: list[dict[str, Any]] = response.json()
    return events


def _by_name(spans: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    grouped: dict[str, list[dict[str, Any]]] = {}
    for span in spans:
        grouped.setdefault(span["name"], []).append(span)
    return grouped


def test_session_trace_has_the_invocation_agent_model_and_tool_spans(http: httpx.Client) -> None:
    events = _ask_capital(http, "t1")
    invocation_id = events[-1]["invocationId"]

    response = http.get(f"/dev/apps/{APP}/debug/trace/session/t1")

    assert response.status_code == 200, response.text
    spans = response.json()
    assert all(set(span) == WEB_UI_SPAN_KEYS for span in spans)
    named = _by_name(spans)
    assert sorted(named) == [
        "call_llm",
        "execute_tool get_capital_city",
        "invocation",
        f"invoke_agent {APP}",
    ]
    assert len(named["call_llm"]) == 2  # the call of the tool, then the answer
    (root,) = named["invocation"]
    (agent,) = named[f"invoke_agent {APP}"]
    (tool,) = named["execute_tool get_capital_city"]
    assert root["parent_span_id"] is None
    assert agent["parent_span_id"] == root["span_id"]
    assert all(span["parent_span_id"] == agent["span_id"] for span in [*named["call_llm"], tool])
    assert {span["trace_id"] for span in spans} == {root["trace_id"]}
    for span in spans:
        assert span["attributes"]["gcp.vertex.agent.session_id"] == "t1"
        assert span["attributes"]["gcp.vertex.agent.invocation_id"] == invocation_id
        assert span["start_time"] <= span["end_time"]
        assert span["logs"] == []
    assert root["start_time"] <= agent["start_time"] <= tool["start_time"] <= root["end_time"]
    assert agent["attributes"]["gen_ai.agent.name"] == APP
    assert tool["attributes"]["gen_ai.tool.name"] == "get_capital_city"
    assert json.loads(tool["attributes"]["gcp.vertex.agent.tool_call_args"]) == {
        "country": "France"
    }
    assert "Paris" in tool["attributes"]["gcp.vertex.agent.tool_response"]
    assert named["call_llm"][0]["attributes"]["gen_ai.request.model"] == "scripted-capital"

    # A second turn is a second trace of the same session.
    second_turn = http.post(
        "/run",
        json={
            "appName": APP,
            "userId": "u1",
            "sessionId": "t1",
            "newMessage": {"role": "user", "parts": [{"text": "And the capital of Japan?"}]},
        },
    )
    assert second_turn.status_code == 200
    again = http.get(f"/dev/apps/{APP}/debug/trace/session/t1").json()
    assert len({span["trace_id"] for span in again}) == 2
    assert len(again) == 2 * len(spans)


def test_event_trace_is_the_span_that_produced_the_event(http: httpx.Client) -> None:
    events = _ask_capital(http, "t2")
    call, answer, final = (event for event in events if event["author"] == APP)
    assert "functionCall" in call["content"]["parts"][0]
    assert "functionResponse" in answer["content"]["parts"][0]

    model = http.get(f"/dev/apps/{APP}/debug/trace/{call['id']}")
    assert model.status_code == 200, model.text
    attributes = model.json()
    assert attributes["gcp.vertex.agent.event_id"] == call["id"]
    assert attributes["gcp.vertex.agent.session_id"] == "t2"
    assert isinstance(attributes["trace_id"], int)
    assert isinstance(attributes["span_id"], int)
    request = json.loads(attributes["gcp.vertex.agent.llm_request"])
    assert request["model"] == "scripted-capital"
    assert "France" in json.dumps(request["contents"])
    response = json.loads(attributes["gcp.vertex.agent.llm_response"])
    assert response["content"]["parts"][0]["function_call"]["name"] == "get_capital_city"

    tool = http.get(f"/dev/apps/{APP}/debug/trace/{answer['id']}").json()
    assert tool["gen_ai.tool.name"] == "get_capital_city"
    assert tool["gcp.vertex.agent.event_id"] == answer["id"]

    last = http.get(f"/dev/apps/{APP}/debug/trace/{final['id']}").json()
    assert "Paris" in last["gcp.vertex.agent.llm_response"]
    assert last["span_id"] != attributes["span_id"]
    assert last["trace_id"] == attributes["trace_id"] == tool["trace_id"]


def test_unknowns_answer_as_adk_does_or_as_problems(http: httpx.Client) -> None:
    assert http.get(f"/dev/apps/{APP}/debug/trace/session/never-ran").json() == []
    missing = http.get(f"/dev/apps/{APP}/debug/trace/no-such-event")
    assert missing.status_code == 404
    assert missing.headers["content-type"].startswith("application/problem+json")
    assert missing.json()["type"].endswith("trace-not-found")
    for path in ("/dev/apps/nope/debug/trace/session/t1", "/dev/apps/nope/debug/trace/e1"):
        response = http.get(path)
        assert response.status_code == 404
        assert response.json()["type"].endswith("app-not-found")


def test_trace_routes_need_the_same_credentials_as_the_api(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    server = _server(tmp_path_factory.mktemp("dev-trace-auth"), "api_key")
    try:
        for path in ("trace/session/t1", "trace/e1"):
            response = httpx.get(f"{server.url}/dev/apps/{APP}/debug/{path}", timeout=10)
            assert response.status_code == 401
            assert response.headers["content-type"].startswith("application/problem+json")
    finally:
        server.stop()


def test_with_span_recording_off_runs_leave_no_trace(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    server = _server(tmp_path_factory.mktemp("dev-trace-off"), "none", AGENTD_TRACE_SPANS="false")
    try:
        with httpx.Client(base_url=server.url, timeout=30) as client:
            events = _ask_capital(client, "t3")
            assert "Paris" in events[-1]["content"]["parts"][0]["text"]
            assert client.get(f"/dev/apps/{APP}/debug/trace/session/t3").json() == []
            missing = client.get(f"/dev/apps/{APP}/debug/trace/{events[-1]['id']}")
            assert missing.status_code == 404
            assert missing.json()["type"].endswith("trace-not-found")
    finally:
        server.stop()
