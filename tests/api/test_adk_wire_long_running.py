"""A long-running tool's result answered ADK's way (issue 27), over real HTTP on both backends.

The app behaves as the `longrun_agent` of ADK 2.13's recorded flow
(`tests/data/adk-fixtures/long_running.json`): `request_approval` is a LongRunningFunctionTool
that answers `{"status": "pending", "ticketId": ...}`, and its model, after a function response,
says `<tool> answered: <response json>`; after anything else it calls the tool. The model
records every request it gets and the tool every run, one JSON line per session, so a test sees
what the model was sent and how often the tool ran (`tests/api/recorded_flows.py`).

The client answers as ADK's dev UI does: `/run_sse` with the function response in `newMessage`,
without `invocationId`. As in ADK, the answer continues the invocation that made the call (its
events carry that invocation's id), the model's request ends with the answer right after its
call (what came between is dropped), and the tool never runs again.
"""

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.api.recorded_flows import (
    USER,
    get_session,
    logged,
    new_session,
    recorded_flow,
    recording_servers,
    run_sse,
    statuses,
)
from tests.histories import kinds

APP = "longrun_agent"
CALL = {"name": "request_approval", "args": {"purpose": "laptop", "amount": 1200}}
PENDING = {"status": "pending", "ticketId": "approval-ticket-1"}
APPROVED = {"status": "approved", "ticketId": "approval-ticket-1", "approver": "manager"}

_LONG_RUNNING = '''
from app.tools import LongRunningFunctionTool

CALL = {"name": "request_approval", "args": {"purpose": "laptop", "amount": 1200}}


def request_approval(purpose: str, amount: int, tool_context: ToolContext) -> dict:
    """Asks a manager to approve an expense; the decision comes later."""
    _record(tool_context.session_id, what="tool", purpose=purpose, amount=amount)
    return {"status": "pending", "ticketId": "approval-ticket-1"}


root_agent = LlmAgent(
    name="longrun_agent",
    model=RecordingLlm(),
    tools=[LongRunningFunctionTool(request_approval)],
    before_model_callback=_label_session,
)
'''

sqlite_server, postgres_server, served = recording_servers("long-running", {APP: _LONG_RUNNING})


def _run_sse(
    http: httpx.Client, sid: str, parts: list[dict[str, Any]], **fields: Any
) -> list[dict[str, Any]]:
    """ADK's `POST /run_sse` with a user message of `parts`: the events of its frames."""
    message = {"role": "user", "parts": parts}
    body = {"userId": USER, "newMessage": message, "streaming": False, **fields}
    return run_sse(http, APP, sid, body)


def _answer(call_id: str) -> list[dict[str, Any]]:
    return [{"functionResponse": {"id": call_id, "name": CALL["name"], "response": APPROVED}}]


def _started(http: httpx.Client) -> tuple[str, list[dict[str, Any]]]:
    """A new session, and the frames of its first message (the tool answers "pending")."""
    sid = new_session(http, APP)
    frames = _run_sse(http, sid, [{"text": "Please get my laptop expense approved"}])
    return sid, frames


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
    events = get_session(http, APP, sid)["events"]
    assert len(events) == 8
    recorded = recorded_flow("long_running")
    assert kinds(first) == kinds(recorded["run_sse_user_message"]["response"]["frames"])
    again = recorded["run_sse_function_response_again"]["response"]["frames"]
    assert kinds(frames) == kinds(again)
    assert kinds(events) == kinds(recorded["get_session"]["response"]["json"]["events"])
    assert {e["invocationId"] for e in events} == {iid}
    assert [e["author"] for e in events] == ["user", APP, APP, APP, "user", APP, "user", APP]
    assert events[4]["content"]["parts"] == _answer(call["id"])
    assert statuses(http, APP, sid) == [(iid, "completed")]
    assert len(logged(records, sid, "tool")) == 1


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
    contents = logged(records, sid, "model")[-1]["contents"]
    answer = {"id": call["id"], "name": CALL["name"], "response": APPROVED}
    assert contents == [
        {"role": "user", "parts": [{"text": "Please get my laptop expense approved"}]},
        {"role": "model", "parts": [{"function_call": {**CALL, "id": call["id"]}}]},
        {"role": "user", "parts": [{"function_response": answer}]},
    ]
    assert len(logged(records, sid, "tool")) == 1
