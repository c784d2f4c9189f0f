"""ADK's /run and /run_sse over real HTTP: the same shapes as ADK's recorded answers
(`tests/data/adk-fixtures/`)."""

import json
from typing import Any

import httpx
import pytest

from tests.adk_fixtures import adk_fixture as _fixture
from tests.live_server import LiveServer, build_agents_dir, iter_sse

VOLATILE = {"id", "invocationId", "timestamp", "lastUpdateTime"}


def shape(value: Any) -> Any:
    """Keys (in order) and value types, recursively; ids and times are only typed."""
    if isinstance(value, dict):
        return [(k, shape(v)) for k, v in value.items()]
    if isinstance(value, list):
        return [shape(v) for v in value]
    return type(value).__name__


def normalized(value: Any) -> Any:
    """The value with run-specific ids and times blanked (function-call ids too)."""
    if isinstance(value, dict):
        return {k: ("*" if k in VOLATILE else normalized(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [normalized(v) for v in value]
    return value


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """One server (SQLite, local blobs) replaying the fixture sequence."""
    root = tmp_path_factory.mktemp("runs-http")
    live = LiveServer(
        root,
        {
            "AGENTD_DATA_DIR": str(root / "data"),
            "AGENTD_AGENTS_DIR": str(build_agents_dir(root / "agents")),
        },
    ).start()
    yield live
    live.stop()


@pytest.fixture(scope="module")
def recorded(server: LiveServer) -> dict[str, Any]:
    """Our answers to the request sequence the ADK fixtures were recorded with."""
    answers: dict[str, Any] = {}
    with httpx.Client(base_url=server.url, timeout=30) as http:
        for name in ("create_session",):
            request = _fixture(name)["request"]
            answers[name] = http.request(request["method"], request["path"], json=request["body"])
        http.patch("/apps/capital_agent/users/u1/sessions/s1", json={"stateDelta": {"x": 2}})
        run = _fixture("run")["request"]
        answers["run"] = http.post(run["path"], json=run["body"])
        for name in ("run_sse", "run_sse_stream"):
            request = _fixture(name)["request"]
            with http.stream("POST", request["path"], json=request["body"]) as response:
                frames = list(iter_sse(response.iter_lines()))
                answers[name] = (response, frames)
        answers["session"] = http.get("/apps/capital_agent/users/u1/sessions/s1")
    return answers


def test_run_answers_with_adk_keys_and_values(recorded: dict[str, Any]) -> None:
    response = recorded["run"]
    expected = _fixture("run")["response"]
    assert response.status_code == 200
    assert response.headers["content-type"] == expected["content_type"]
    body = response.json()
    assert shape(body) == shape(expected["json"])
    assert normalized(_strip_call_ids(body)) == normalized(_strip_call_ids(expected["json"]))


@pytest.mark.parametrize("name", ["run_sse", "run_sse_stream"])
def test_run_sse_frames_have_adk_shapes(recorded: dict[str, Any], name: str) -> None:
    response, frames = recorded[name]
    expected = _fixture(name)["response"]
    assert response.status_code == 200
    assert response.headers["content-type"] == expected["content_type"]
    ours = [json.loads(f.data) for f in frames if f.data]
    assert [shape(f) for f in ours] == [shape(f) for f in expected["frames"]]
    final_texts = [f["content"]["parts"][0].get("text") for f in ours if "content" in f]
    assert final_texts[-1] == expected["frames"][-1]["content"]["parts"][0]["text"]
    deltas = [f["actions"]["artifactDelta"] for f in ours]
    assert deltas == [f["actions"]["artifactDelta"] for f in expected["frames"]]
    states = [f["actions"]["stateDelta"] for f in ours]
    assert states == [f["actions"]["stateDelta"] for f in expected["frames"]]
    # Persisted events carry their seq as the SSE id; partial chunks have none.
    assert all((f.id is None) == ('"partial":true' in f.data) for f in frames if f.data)


def test_session_after_the_runs_matches_adk_history_shape(recorded: dict[str, Any]) -> None:
    body = recorded["session"].json()
    expected = _fixture("get_session_with_history")["response"]["json"]
    assert body["state"] == expected["state"]
    assert len(body["events"]) == len(expected["events"])
    for ours, theirs in zip(body["events"], expected["events"], strict=True):
        assert [k for k in ours if k != "seq"] == list(theirs)
    assert [e["seq"] for e in body["events"]] == list(range(1, 14))


def test_create_session_answer_shape_matches_adk(recorded: dict[str, Any]) -> None:
    response = recorded["create_session"]
    expected = _fixture("create_session")["response"]
    assert response.status_code == 201  # ADK answers 200; a creation is 201
    assert shape(response.json()) == shape(expected["json"])


def test_run_errors_are_problems_before_streaming(server: LiveServer) -> None:
    body = {
        "appName": "capital_agent",
        "userId": "u1",
        "sessionId": "missing",
        "newMessage": {"role": "user", "parts": [{"text": "hi"}]},
    }
    with httpx.Client(base_url=server.url, timeout=30) as http:
        for path in ("/run", "/run_sse"):
            response = http.post(path, json=body)
            assert response.status_code == 404
            assert response.json()["type"] == "session-not-found"
            unknown_app = http.post(path, json={**body, "appName": "nope"})
            assert unknown_app.json()["type"] == "app-not-found"
            snake = http.post(path, json={"app_name": "capital_agent", "user_id": "u1"})
            assert snake.status_code == 422


def _strip_call_ids(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    text = json.dumps(events)
    for event in events:
        for part in event.get("content", {}).get("parts", []):
            for key in ("functionCall", "functionResponse"):
                if key in part:
                    text = text.replace(part[key]["id"], "CALL")
    result: list[dict[str, Any]] = json.loads(text)
    return result
