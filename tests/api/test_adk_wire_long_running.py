"""A long-running tool's result answered ADK's way (issue 27), over real HTTP on both backends.

The app behaves as the `longrun_agent` of ADK 2.13's recorded flow
(`tests/data/adk-fixtures/long_running.json`): `request_approval` is a LongRunningFunctionTool
that answers `{"status": "pending", "ticketId": ...}`, and its model, after a function response,
says `<tool> answered: <response json>`; after anything else it calls the tool. The model
records every request it gets and the tool every run, one JSON line per session, so a test sees
what the model was sent and how often the tool ran.

The client answers as ADK's dev UI does: `/run_sse` with the function response in `newMessage`,
without `invocationId`. As in ADK, the answer continues the invocation that made the call (its
events carry that invocation's id), the model's request ends with the answer right after its
call (what came between is dropped), and the tool never runs again.
"""

import json
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.api.served import on_both_backends
from tests.live_server import LiveServer, iter_sse

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "adk-fixtures" / "long_running.json"
APP = "longrun_agent"
USER = "u1"
SESSIONS = f"/apps/{APP}/users/{USER}/sessions"
CALL = {"name": "request_approval", "args": {"purpose": "laptop", "amount": 1200}}
PENDING = {"status": "pending", "ticketId": "approval-ticket-1"}
APPROVED = {"status": "approved", "ticketId": "approval-ticket-1", "approver": "manager"}

AGENT_SOURCE = '''
import json
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

from google.genai import types

from app.agents import LlmAgent
from app.models.llm import LlmRequest, LlmResponse
from app.models.scripted import ScriptedLlm
from app.tools import LongRunningFunctionTool
from app.tools.tool_context import ToolContext

RECORDS = Path(__file__).resolve().parents[2] / "records"


def _record(session_id: str, **entry: Any) -> None:
    RECORDS.mkdir(exist_ok=True)
    with (RECORDS / f"{session_id}.jsonl").open("a") as log:
        log.write(json.dumps(entry) + "\\n")


def request_approval(purpose: str, amount: int, tool_context: ToolContext) -> dict:
    """Asks a manager to approve an expense; the decision comes later."""
    _record(tool_context.session_id, what="tool", purpose=purpose, amount=amount)
    return {"status": "pending", "ticketId": "approval-ticket-1"}


class RecordingLlm(ScriptedLlm):
    """After a function response: "<tool> answered: <response json>"; else the tool's call.
    Every request is recorded (its contents as JSON) under the session its labels name."""

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        labels = (llm_request.config.labels if llm_request.config else None) or {}
        contents = [c.model_dump(mode="json", exclude_none=True) for c in llm_request.contents]
        _record(labels.get("session", ""), what="model", contents=contents)
        last = llm_request.contents[-1] if llm_request.contents else None
        answer = next(
            (p.function_response for p in (last.parts or []) if p.function_response),
            None,
        ) if last is not None else None
        if answer is not None:
            text = f"{answer.name} answered: {json.dumps(answer.response, sort_keys=True)}"
            part = types.Part(text=text)
        else:
            call = types.FunctionCall(
                name="request_approval", args={"purpose": "laptop", "amount": 1200}
            )
            part = types.Part(function_call=call)
        yield LlmResponse(content=types.Content(role="model", parts=[part]))


def _label_session(callback_context: Any, llm_request: LlmRequest) -> None:
    if llm_request.config is not None:
        llm_request.config.labels = {"session": callback_context.session.id}


root_agent = LlmAgent(
    name="longrun_agent",
    model=RecordingLlm(),
    tools=[LongRunningFunctionTool(request_approval)],
    before_model_callback=_label_session,
)
'''


def _write_app(root: Path) -> Path:
    folder = root / "agents" / APP
    folder.mkdir(parents=True)
    (folder / "agent.py").write_text(textwrap.dedent(AGENT_SOURCE))
    return root / "agents"


sqlite_server, postgres_server, _ = on_both_backends("long-running", _write_app)


@pytest.fixture(params=["sqlite", "postgres"])
def served(request: pytest.FixtureRequest) -> Iterator[tuple[httpx.Client, Path]]:
    """A client of the backend's server, and the folder its app records into."""
    server: LiveServer = request.getfixturevalue(f"{request.param}_server")
    records = Path(server.env["AGENTD_AGENTS_DIR"]).parent / "records"
    with httpx.Client(base_url=server.url, timeout=30) as client:
        yield client, records


def _records(records: Path, sid: str, what: str) -> list[dict[str, Any]]:
    path = records / f"{sid}.jsonl"
    lines = path.read_text().splitlines() if path.exists() else []
    return [entry for entry in map(json.loads, lines) if entry["what"] == what]


def _run_sse(
    http: httpx.Client, sid: str, parts: list[dict[str, Any]], **fields: Any
) -> list[dict[str, Any]]:
    """ADK's `POST /run_sse`: the events of its frames."""
    body = {
        "appName": APP,
        "userId": USER,
        "sessionId": sid,
        "newMessage": {"role": "user", "parts": parts},
        "streaming": False,
        **fields,
    }
    with http.stream("POST", "/run_sse", json=body) as response:
        assert response.status_code == 200, response.read()
        frames = list(iter_sse(response.iter_lines()))
    return [json.loads(f.data) for f in frames if f.data]


def _answer(call_id: str) -> list[dict[str, Any]]:
    return [{"functionResponse": {"id": call_id, "name": CALL["name"], "response": APPROVED}}]


def _started(http: httpx.Client) -> tuple[str, list[dict[str, Any]]]:
    """A new session, and the frames of its first message (the tool answers "pending")."""
    sid = f"s-{uuid.uuid4().hex[:12]}"
    assert http.post(SESSIONS, json={"sessionId": sid}).status_code == 201
    frames = _run_sse(http, sid, [{"text": "Please get my laptop expense approved"}])
    return sid, frames


def _recorded() -> dict[str, dict[str, Any]]:
    """ADK's recording of this flow, by exchange name."""
    return {e["name"]: e["response"] for e in json.loads(FIXTURE.read_text())}


def _kinds(events: list[dict[str, Any]]) -> list[list[str]]:
    return [[key for part in e["content"]["parts"] for key in part] for e in events]


def _said(response: dict[str, Any]) -> str:
    return f"request_approval answered: {json.dumps(response, sort_keys=True)}"


def test_the_long_running_flow_answers_as_adk_and_the_tool_runs_once(
    served: tuple[httpx.Client, Path],
) -> None:
    http, records = served
    sid, first = _started(http)
    # long_running.json step 2: the call (listed as long-running), the tool's "pending"
    # response, the model's reply to it; one invocation.
    assert [list(e["content"]["parts"][0]) for e in first] == [
        ["functionCall"],
        ["functionResponse"],
        ["text"],
    ]
    call = first[0]["content"]["parts"][0]["functionCall"]
    assert {"name": call["name"], "args": call["args"]} == CALL
    assert first[0]["longRunningToolIds"] == [call["id"]]
    assert first[1]["content"]["parts"][0]["functionResponse"]["response"] == PENDING
    assert first[2]["content"]["parts"][0]["text"] == _said(PENDING)
    iid = first[0]["invocationId"]
    assert {e["invocationId"] for e in first} == {iid}

    # Steps 3 and 4: the answer, then the same answer again, each without `invocationId`: one
    # frame, the model's reply to the result, under the invocation that made the call.
    for _ in range(2):
        frames = _run_sse(http, sid, _answer(call["id"]), functionCallEventId=first[0]["id"])
        assert [e["content"]["parts"] for e in frames] == [[{"text": _said(APPROVED)}]]
        assert frames[0]["invocationId"] == iid
        assert frames[0]["author"] == APP

    # Step 5: 8 events, all of the one invocation; the answers are stored as user events.
    events = http.get(f"{SESSIONS}/{sid}").json()["events"]
    assert len(events) == 8
    recorded = _recorded()
    assert _kinds(first) == _kinds(recorded["run_sse_user_message"]["frames"])
    assert _kinds(frames) == _kinds(recorded["run_sse_function_response_again"]["frames"])
    assert _kinds(events) == _kinds(recorded["get_session"]["json"]["events"])
    assert {e["invocationId"] for e in events} == {iid}
    assert [e["author"] for e in events] == ["user", APP, APP, APP, "user", APP, "user", APP]
    assert events[4]["content"]["parts"] == _answer(call["id"])
    listed = http.get(f"{SESSIONS}/{sid}/invocations").json()["invocations"]
    assert [(i["id"], i["status"]) for i in listed] == [(iid, "completed")]
    assert len(_records(records, sid, "tool")) == 1


@pytest.mark.parametrize("with_invocation_id", [False, True])
def test_the_models_request_after_a_long_running_answer_ends_with_it_after_its_call(
    served: tuple[httpx.Client, Path], with_invocation_id: bool
) -> None:
    http, records = served
    sid, first = _started(http)
    call = first[0]["content"]["parts"][0]["functionCall"]
    named = {"invocationId": first[0]["invocationId"]} if with_invocation_id else {}
    frames = _run_sse(http, sid, _answer(call["id"]), **named)
    assert [e["invocationId"] for e in frames] == [first[0]["invocationId"]]
    # ADK drops what came between the call and its latest answer (the "pending" response and
    # the model's reply to it): the request is the user's text, the call, the answer.
    contents = _records(records, sid, "model")[-1]["contents"]
    answer = {"id": call["id"], "name": CALL["name"], "response": APPROVED}
    assert contents == [
        {"role": "user", "parts": [{"text": "Please get my laptop expense approved"}]},
        {"role": "model", "parts": [{"function_call": {**CALL, "id": call["id"]}}]},
        {"role": "user", "parts": [{"function_response": answer}]},
    ]
    assert len(_records(records, sid, "tool")) == 1
