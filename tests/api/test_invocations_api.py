"""Invocation routes in-process (TestClient): result shapes, limits, errors, paging, streams."""

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from app.settings import Settings
from tests.live_server import build_agents_dir, iter_sse
from tests.problems import assert_problem

CAPITAL = "/apps/capital_agent/users/u1/sessions"
GATED = "/apps/gated_agent/users/u1/sessions"
QUESTION = {"role": "user", "parts": [{"text": "What is the capital of France?"}]}


@pytest.fixture
def client(
    api_settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[TestClient]:
    """An app with the test apps, a 2.5 s invocation limit and at most 3 model calls."""
    monkeypatch.setenv("AGENTD_TEST_GATES", str(tmp_path / "gates"))
    (tmp_path / "gates").mkdir()
    settings = api_settings.model_copy(
        update={
            "agents_dir": build_agents_dir(tmp_path / "agents"),
            "max_invocation_seconds": 2.5,
            "max_llm_calls": 3,
        }
    )
    with TestClient(create_app(settings)) as test_client:
        for base in (CAPITAL, GATED):
            test_client.post(base, json={"sessionId": "s"})
        yield test_client


def test_wait_mode_returns_the_invocation_and_its_events(client: TestClient) -> None:
    response = client.post(f"{CAPITAL}/s/invocations", json={"newMessage": QUESTION})
    assert response.status_code == 200
    body = response.json()
    assert body["invocation"]["status"] == "completed"
    assert body["invocation"]["mode"] == "wait"
    assert [e["seq"] for e in body["events"]] == [1, 2, 3, 4]
    assert body["events"][-1]["content"]["parts"][0]["text"] == "The capital of France is Paris."
    iid = body["invocation"]["id"]
    assert response.headers["location"].endswith(f"/sessions/s/invocations/{iid}")
    got = client.get(f"{CAPITAL}/s/invocations/{iid}").json()
    assert got["status"] == "completed"
    assert got["endTime"] >= got["startTime"] >= got["createTime"]


def test_stream_mode_sends_ids_event_names_and_done(client: TestClient) -> None:
    body = {"newMessage": QUESTION, "mode": "stream", "runConfig": {"streamingMode": "sse"}}
    with client.stream("POST", f"{CAPITAL}/s/invocations", json=body) as response:
        frames = list(iter_sse(response.iter_lines()))
    kinds = [f.event for f in frames]
    assert kinds == ["event", "event", "event", "partial", "partial", "event", "done"]
    assert [f.id for f in frames if f.event == "event"] == ["1", "2", "3", "4"]
    assert all(f.id is None for f in frames if f.event in ("partial", "done"))
    assert json.loads(frames[-1].data)["status"] == "completed"


def test_invocation_over_the_time_limit_fails_with_a_typed_error(client: TestClient) -> None:
    response = client.post(f"{GATED}/s/invocations", json={"newMessage": QUESTION})
    assert_problem(response, 504, "invocation-timeout")
    (invocation,) = client.get(f"{GATED}/s/invocations").json()["invocations"]
    assert invocation["status"] == "failed"
    assert invocation["error"]["type"] == "invocation-timeout"
    # The session is released: the next run is not refused as busy.
    again = client.post(
        f"{GATED}/s/invocations", json={"newMessage": QUESTION, "mode": "background"}
    )
    assert again.status_code == 202


def test_stream_reports_a_failure_as_an_error_frame_then_done(client: TestClient) -> None:
    body = {"newMessage": QUESTION, "mode": "stream"}
    with client.stream("POST", f"{GATED}/s/invocations", json=body) as response:
        frames = list(iter_sse(response.iter_lines()))
    assert [f.event for f in frames][-2:] == ["error", "done"]
    assert json.loads(frames[-2].data)["type"] == "invocation-timeout"


def test_run_config_cannot_raise_the_servers_model_call_cap(
    client: TestClient, tmp_path: Path
) -> None:
    # gated_agent needs 2 model calls; the server allows 3, the request asks for 1.
    (tmp_path / "gates" / "s.open").touch()
    body = {"newMessage": QUESTION, "runConfig": {"maxLlmCalls": 1}}
    assert_problem(
        client.post(f"{GATED}/s/invocations", json=body), 422, "llm-calls-limit-exceeded"
    )
    generous = {"newMessage": QUESTION, "runConfig": {"maxLlmCalls": 10_000}}
    assert client.post(f"{GATED}/s/invocations", json=generous).status_code == 200


def test_invocation_routes_404_and_422(client: TestClient) -> None:
    assert_problem(client.get(f"{CAPITAL}/s/invocations/e-nope"), 404, "invocation-not-found")
    assert_problem(
        client.post(f"{CAPITAL}/s/invocations/e-nope/cancel"), 404, "invocation-not-found"
    )
    assert_problem(
        client.post(f"{CAPITAL}/missing/invocations", json={"newMessage": QUESTION}),
        404,
        "session-not-found",
    )
    assert_problem(client.get(f"{CAPITAL}/missing/invocations"), 404, "session-not-found")
    assert_problem(
        client.post(f"{CAPITAL}/s/invocations", json={"newMessage": QUESTION, "mode": "later"}),
        422,
        "request-validation-failed",
    )
    iid = client.post(f"{CAPITAL}/s/invocations", json={"newMessage": QUESTION}).json()[
        "invocation"
    ]["id"]
    # Another user's session never shows this invocation.
    client.post("/apps/capital_agent/users/u2/sessions", json={"sessionId": "s"})
    assert_problem(
        client.get(f"/apps/capital_agent/users/u2/sessions/s/invocations/{iid}"),
        404,
        "invocation-not-found",
    )
    bad_resume = client.get(
        f"{CAPITAL}/s/invocations/{iid}/events", headers={"Last-Event-ID": "abc"}
    )
    assert_problem(bad_resume, 422, "invalid-request")


def test_finished_invocation_events_replay_from_the_database(client: TestClient) -> None:
    iid = client.post(f"{CAPITAL}/s/invocations", json={"newMessage": QUESTION}).json()[
        "invocation"
    ]["id"]
    with client.stream(
        "GET", f"{CAPITAL}/s/invocations/{iid}/events", headers={"Last-Event-ID": "2"}
    ) as response:
        frames = list(iter_sse(response.iter_lines()))
    assert [(f.event, f.id) for f in frames] == [("event", "3"), ("event", "4"), ("done", None)]


def test_invocations_list_pages_newest_first(client: TestClient) -> None:
    ids = [
        client.post(f"{CAPITAL}/s/invocations", json={"newMessage": QUESTION}).json()["invocation"][
            "id"
        ]
        for _ in range(5)
    ]
    seen: list[str] = []
    params: dict[str, str | int] = {"pageSize": 2}
    while True:
        page = client.get(f"{CAPITAL}/s/invocations", params=params).json()
        seen += [i["id"] for i in page["invocations"]]
        if "nextPageToken" not in page:
            break
        params = {"pageSize": 2, "pageToken": page["nextPageToken"]}
    assert seen == list(reversed(ids))
