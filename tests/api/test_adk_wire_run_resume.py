"""ADK's `/run` and `/run_sse` with `invocationId` and `customMetadata` (issue 15), over real HTTP.

One agentd server process per backend (SQLite, PostgreSQL) serves the `resumable_agent` test app,
whose tools fail or wait until a test creates a gate file. The answers are checked against ADK's
recorded ones (`tests/data/adk-fixtures/run.json`, `resume_invocation.json`): an array of ADK
events. Where agentd differs on purpose (an unknown id is 404, a finished one 409, a text
`newMessage` is stored), the test says so.
"""

import json
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.adk_fixtures import FIXTURES
from tests.api.served import get_json
from tests.apps.resumable_agent.agent import BROKE_MESSAGE, FIXED, RELEASED
from tests.backends import module_servers
from tests.histories import kinds, parts
from tests.live_server import LiveServer, gated_app_env, iter_sse, wait_until

APP = "resumable_agent"
USER = "u1"
SESSIONS = f"/apps/{APP}/users/{USER}/sessions"
METADATA = {"client": {"name": "dev-ui", "build": 7}, "tags": ["a", "b"], "ok": True}


class Deployment:
    """A server on one backend and the folder of its tools' gates."""

    def __init__(self, root: Path, database_url: str) -> None:
        self.gates = root / "gates"
        self.server = LiveServer(root / "server", gated_app_env(root, self.gates, database_url))

    def fix(self, sid: str) -> None:
        """From now on, the session's `flaky` tool succeeds."""
        (self.gates / f"{sid}.fixed").touch()

    def release(self, sid: str) -> None:
        """Let the session's waiting `hold` tool return."""
        (self.gates / f"{sid}.open").touch()


sqlite_deployment, postgres_deployment, deployment, http = module_servers("resume", Deployment)


# -- helpers ------------------------------------------------------------------------------------


def _fixture(name: str) -> Any:
    return json.loads((FIXTURES / f"{name}.json").read_text())


def _resume_step(name: str) -> dict[str, Any]:
    """One exchange of `resume_invocation.json`."""
    (step,) = [s for s in _fixture("resume_invocation") if s["name"] == name]
    found: dict[str, Any] = step
    return found


def shape(value: Any) -> Any:
    """Keys (in order) and value types, recursively."""
    if isinstance(value, dict):
        return [(k, shape(v)) for k, v in value.items()]
    if isinstance(value, list):
        return [shape(v) for v in value]
    return type(value).__name__


def _new_session(http: httpx.Client) -> str:
    sid = f"s-{uuid.uuid4().hex[:12]}"
    created = http.post(SESSIONS, json={"sessionId": sid})
    assert created.status_code == 201, created.text
    return sid


def _message(text: str) -> dict[str, Any]:
    return {"role": "user", "parts": [{"text": text}]}


def _body(sid: str, **fields: Any) -> dict[str, Any]:
    """A `/run` body as ADK clients send it (camelCase)."""
    return {"appName": APP, "userId": USER, "sessionId": sid, **fields}


def _sse_events(http: httpx.Client, body: dict[str, Any]) -> tuple[httpx.Response, list[Any]]:
    """`POST /run_sse`: the response and its frames' events."""
    with http.stream("POST", "/run_sse", json=body) as response:
        frames = list(iter_sse(response.iter_lines()))
    return response, [json.loads(f.data) for f in frames if f.data]


def _history(http: httpx.Client, sid: str) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = get_json(http, f"{SESSIONS}/{sid}")["events"]
    return events


def _invocation(http: httpx.Client, sid: str, iid: str) -> dict[str, Any]:
    body: dict[str, Any] = get_json(http, f"{SESSIONS}/{sid}/invocations/{iid}")
    return body


def _texts(events: list[dict[str, Any]]) -> list[str]:
    return [p["text"] for e in events for p in parts(e) if "text" in p]


def _assert_each_call_answered_once(events: list[dict[str, Any]]) -> None:
    calls = [p["functionCall"]["id"] for e in events for p in parts(e) if "functionCall" in p]
    answers = [
        p["functionResponse"]["id"] for e in events for p in parts(e) if "functionResponse" in p
    ]
    assert calls
    assert Counter(answers) == Counter(calls)


def _assert_adk_answer(events: list[dict[str, Any]]) -> None:
    """The answer to a resume has the shape of ADK's: an array of events, the model's text last
    exactly as ADK's (`resume_invocation.json`, the resume with the function response)."""
    theirs = _resume_step("run_resume_function_response")["response"]
    assert theirs["content_type"] == "application/json"
    adk_text = theirs["json"][0]
    assert shape(events[-1]) == shape(adk_text)
    # Tool calls and results as ADK's `/run` answers them (`run.json`): the same keys in order.
    adk_call, adk_result = _fixture("run")["response"]["json"][:2]
    for event in events[:-1]:
        expected = adk_call if "functionCall" in parts(event)[0] else adk_result
        assert list(event) == list(expected)


def _run_elsewhere(deployment: Deployment, body: dict[str, Any]) -> httpx.Response:
    """`POST /run` on a client of its own (for a thread)."""
    with httpx.Client(base_url=deployment.server.url, timeout=60) as client:
        return client.post("/run", json=body)


def _fail_flaky(http: httpx.Client, sid: str) -> str:
    """Run `flaky` unfixed: the invocation fails; its id."""
    failed = http.post("/run", json=_body(sid, newMessage=_message("flaky")))
    assert failed.status_code == 500, failed.text
    assert failed.json()["type"] == "invocation-failed"
    (iid,) = {str(e["invocationId"]) for e in _history(http, sid)}
    assert _invocation(http, sid, iid)["status"] == "failed"
    return iid


def _cancel_hold(http: httpx.Client, sid: str) -> str:
    """Start `hold` in the background and cancel it mid-tool; the invocation's id."""
    started = http.post(
        f"{SESSIONS}/{sid}/invocations",
        json={"newMessage": _message("hold"), "mode": "background"},
    )
    assert started.status_code == 202, started.text
    iid: str = started.json()["id"]
    wait_until(lambda: kinds(_history(http, sid))[-1:] == [f"{APP}: functionCall"])
    cancelled = http.post(f"{SESSIONS}/{sid}/invocations/{iid}/cancel")
    assert cancelled.json()["status"] == "cancelled", cancelled.text
    return iid


# -- customMetadata -----------------------------------------------------------------------------


def test_custom_metadata_is_kept_on_the_user_event_of_run_run_sse_and_invocations(
    http: httpx.Client,
) -> None:
    sid = _new_session(http)

    run = http.post("/run", json=_body(sid, newMessage=_message("one"), customMetadata=METADATA))
    sse, frames = _sse_events(http, _body(sid, newMessage=_message("two"), customMetadata={"n": 2}))
    created = http.post(
        f"{SESSIONS}/{sid}/invocations",
        json={"newMessage": _message("three"), "customMetadata": {"n": 3}},
    )

    assert run.status_code == 200, run.text
    assert _texts(run.json()) == ["you said: one"]
    assert shape(run.json()[0]) == shape(_fixture("run")["response"]["json"][-1])
    assert sse.status_code == 200
    assert _texts(frames) == ["you said: two"]
    assert created.status_code == 200, created.text
    events = _history(http, sid)
    users = [e for e in events if e["author"] == "user"]
    assert [u["customMetadata"] for u in users] == [METADATA, {"n": 2}, {"n": 3}]
    assert all("customMetadata" not in e for e in events if e["author"] != "user")
    # Otherwise the user event is ADK's (key order aside: PostgreSQL's JSONB keeps its own).
    adk_user = _fixture("get_session_with_history")["response"]["json"]["events"][1]
    assert set(users[0]) - {"seq", "customMetadata"} == set(adk_user)


# -- resuming a failed invocation ---------------------------------------------------------------


def test_a_failed_invocation_resumed_without_new_message_completes_under_its_own_id(
    deployment: Deployment, http: httpx.Client
) -> None:
    sid = _new_session(http)
    iid = _fail_flaky(http, sid)

    still_broken = http.post("/run", json=_body(sid, invocationId=iid))
    assert still_broken.status_code == 500, still_broken.text
    assert still_broken.json()["type"] == "invocation-failed"
    assert _invocation(http, sid, iid)["status"] == "failed"
    deployment.fix(sid)
    resumed = http.post("/run", json=_body(sid, invocationId=iid))

    assert resumed.status_code == 200, resumed.text
    assert resumed.headers["content-type"] == "application/json"
    answer = resumed.json()
    assert kinds(answer) == [f"{APP}: functionCall", f"{APP}: functionResponse", f"{APP}: text"]
    assert {e["invocationId"] for e in answer} == {iid}
    assert _texts(answer) == [f"flaky: {FIXED}"]
    _assert_adk_answer(answer)
    invocation = _invocation(http, sid, iid)
    assert invocation["status"] == "completed"
    assert "error" not in invocation
    events = _history(http, sid)
    attempt = [f"{APP}: functionCall", f"{APP}: functionResponse", f"{APP}: error ToolBroke"]
    assert kinds(events) == [
        "user: text",
        *attempt,  # the first run
        *attempt,  # resumed before the tool was fixed
        f"{APP}: functionCall",
        f"{APP}: functionResponse",
        f"{APP}: text",
    ]
    assert {e["invocationId"] for e in events} == {iid}
    answers = [p["functionResponse"] for e in events for p in parts(e) if "functionResponse" in p]
    broke = {"error": {"type": "ToolBroke", "detail": BROKE_MESSAGE}}
    assert [a["response"] for a in answers] == [broke, broke, {"result": FIXED}]
    _assert_each_call_answered_once(events)
    # The answer holds this run's events only: the last three of the history.
    assert [e["id"] for e in answer] == [e["id"] for e in events[-3:]]


def test_a_failed_invocation_resumed_with_a_new_message_stores_it_as_its_user_event(
    http: httpx.Client,
) -> None:
    sid = _new_session(http)
    iid = _fail_flaky(http, sid)

    resumed = http.post(
        "/run",
        json=_body(
            sid, invocationId=iid, newMessage=_message("never mind"), customMetadata=METADATA
        ),
    )

    # ADK drops a text newMessage sent to resume an invocation; agentd stores it and the model
    # answers it.
    assert resumed.status_code == 200, resumed.text
    assert kinds(resumed.json()) == [f"{APP}: text"]
    assert _texts(resumed.json()) == ["you said: never mind"]
    assert resumed.json()[0]["invocationId"] == iid
    _assert_adk_answer(resumed.json())
    events = _history(http, sid)
    assert kinds(events)[-2:] == ["user: text", f"{APP}: text"]
    user = events[-2]
    assert (user["invocationId"], user["customMetadata"]) == (iid, METADATA)
    assert {e["invocationId"] for e in events} == {iid}
    assert _invocation(http, sid, iid)["status"] == "completed"


# -- resuming a cancelled invocation, streamed --------------------------------------------------


def test_a_cancelled_invocation_resumed_over_run_sse_streams_the_resumed_events(
    deployment: Deployment, http: httpx.Client
) -> None:
    sid = _new_session(http)
    iid = _cancel_hold(http, sid)
    before = _history(http, sid)
    assert kinds(before) == ["user: text", f"{APP}: functionCall", f"{APP}: functionResponse"]
    deployment.release(sid)

    response, frames = _sse_events(http, _body(sid, invocationId=iid))

    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    assert kinds(frames) == [f"{APP}: functionCall", f"{APP}: functionResponse", f"{APP}: text"]
    assert _texts(frames) == [f"hold: {RELEASED}"]
    assert {f["invocationId"] for f in frames} == {iid}
    _assert_adk_answer(frames)
    assert _invocation(http, sid, iid)["status"] == "completed"
    events = _history(http, sid)
    assert [e["id"] for e in events[: len(before)]] == [e["id"] for e in before]
    assert [e["id"] for e in events[len(before) :]] == [f["id"] for f in frames]
    assert {e["invocationId"] for e in events} == {iid}
    _assert_each_call_answered_once(events)


def test_following_a_resumed_invocation_from_its_start_gives_the_events_of_every_run(
    deployment: Deployment, http: httpx.Client
) -> None:
    sid = _new_session(http)
    iid = _cancel_hold(http, sid)
    before = [e["id"] for e in _history(http, sid)]

    with ThreadPoolExecutor(1) as pool:
        resuming = pool.submit(_run_elsewhere, deployment, _body(sid, invocationId=iid))
        # The resumed run is in its tool again, on the server: its events are live there.
        wait_until(lambda: kinds(_history(http, sid)).count(f"{APP}: functionCall") == 2)
        followed: list[str] = []
        with http.stream("GET", f"{SESSIONS}/{sid}/invocations/{iid}/events") as response:
            for frame in iter_sse(response.iter_lines()):
                if frame.event != "event":
                    break
                followed.append(json.loads(frame.data)["id"])
                deployment.release(sid)  # the follower is attached to the live run
        run = resuming.result()

    assert run.status_code == 200, run.text
    assert followed == before + [e["id"] for e in run.json()]
    assert frame.event == "done"
    assert json.loads(frame.data)["status"] == "completed"


# -- what cannot be resumed ---------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/run", "/run_sse"])
def test_an_invocation_id_that_names_no_invocation_of_the_session_is_404(
    http: httpx.Client, path: str
) -> None:
    sid = _new_session(http)
    elsewhere = _new_session(http)
    other_sessions = _fail_flaky(http, elsewhere)

    # ADK answers 200 and runs under the made-up id (steps 9 and 10 of resume_invocation.json).
    for iid in ("e-00000000-0000-4000-8000-000000000002", other_sessions):
        for fields in ({}, {"newMessage": _message("hello")}):
            answer = http.post(path, json=_body(sid, invocationId=iid, **fields))
            assert answer.status_code == 404, answer.text
            assert answer.headers["content-type"] == "application/problem+json"
            assert answer.json()["type"] == "invocation-not-found"
    assert _history(http, sid) == []
    missing = http.post(path, json=_body("no-such-session", invocationId=other_sessions))
    assert missing.json()["type"] == "session-not-found"


def test_an_invocation_id_no_invocation_can_have_is_422_on_every_route(http: httpx.Client) -> None:
    sid = _new_session(http)
    nul = "e-a\u0000b"  # PostgreSQL refuses a NUL in a query: never a database error

    for path in ("/run", "/run_sse"):
        answer = http.post(path, json=_body(sid, invocationId=nul))
        assert answer.status_code == 422, answer.text
        # A NUL anywhere in a JSON body is refused before the route runs (issue 26).
        assert answer.json()["type"] == "unstorable-value"
        assert answer.json()["errors"][0]["loc"] == ["body", "invocationId"]
    invocation = f"{SESSIONS}/{sid}/invocations/e-a%00b"
    for method, suffix in (("GET", ""), ("POST", "/cancel"), ("GET", "/events")):
        answer = http.request(method, invocation + suffix)
        assert answer.status_code == 422, (method, suffix, answer.text)
        assert answer.json()["errors"][0]["loc"] == ["path", "invocation_id"]


@pytest.mark.parametrize("path", ["/run", "/run_sse"])
def test_a_completed_invocation_id_is_409_not_resumable(http: httpx.Client, path: str) -> None:
    sid = _new_session(http)
    done = http.post("/run", json=_body(sid, newMessage=_message("hello")))
    assert done.status_code == 200
    iid = done.json()[0]["invocationId"]
    history = _history(http, sid)

    # ADK re-runs a finished invocation from its first message (step 8 of resume_invocation.json).
    answer = http.post(path, json=_body(sid, invocationId=iid))

    assert answer.status_code == 409, answer.text
    assert answer.headers["content-type"] == "application/problem+json"
    problem = answer.json()
    assert problem["type"] == "invocation-not-resumable"
    assert problem["invocationStatus"] == "completed"
    assert "completed" in problem["detail"]
    assert _history(http, sid) == history
    assert _invocation(http, sid, iid)["status"] == "completed"


def test_a_running_invocation_id_is_409_not_resumable(
    deployment: Deployment, http: httpx.Client
) -> None:
    sid = _new_session(http)
    started = http.post(
        f"{SESSIONS}/{sid}/invocations",
        json={"newMessage": _message("hold"), "mode": "background"},
    )
    iid = started.json()["id"]
    wait_until(lambda: _invocation(http, sid, iid)["status"] == "running")

    answer = http.post("/run", json=_body(sid, invocationId=iid))

    assert answer.status_code == 409, answer.text
    assert answer.json()["type"] == "invocation-not-resumable"
    assert answer.json()["invocationStatus"] == "running"
    deployment.release(sid)
    wait_until(lambda: _invocation(http, sid, iid)["status"] == "completed")


@pytest.mark.parametrize("path", ["/run", "/run_sse"])
def test_new_message_may_be_left_out_only_with_an_invocation_id(
    http: httpx.Client, path: str
) -> None:
    sid = _new_session(http)
    iid = _fail_flaky(http, sid)
    history = _history(http, sid)

    for body in (
        _body(sid),
        _body(sid, newMessage=None),
        _body(sid, invocationId=iid, stateDelta={"k": 1}),
        _body(sid, invocationId=iid, customMetadata={"k": 1}),
    ):
        answer = http.post(path, json=body)
        assert answer.status_code == 422, (body, answer.text)
        assert answer.json()["errors"], answer.text

    assert _history(http, sid) == history
    assert _invocation(http, sid, iid)["status"] == "failed"
