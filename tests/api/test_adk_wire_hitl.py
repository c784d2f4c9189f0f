"""ADK's human-in-the-loop flows replayed over real HTTP on both backends (issue 27).

The apps behave as the recorded ones of ADK 2.13 (`tests/data/adk-fixtures/hitl_confirm.json`,
`hitl_deny.json`, `hitl_request_confirmation.json`, `resume_invocation.json`; their README
describes them): `confirm_agent`'s `transfer_money` has `require_confirmation=True`,
`dynconfirm_agent`'s `book_flight` calls `tool_context.request_confirmation(hint, payload)` until
it is confirmed, and `resume_app` (`ResumabilityConfig(is_resumable=True)`) has a long-running
tool that returns nothing. Each model, after a function response, says `<tool> answered:
<response json>`; after anything else it calls its tool. The models record every request and the
tools every run, one JSON line per session, so a test sees how often a tool ran and what the
model was sent (`tests/api/recorded_flows.py`).

The client answers as ADK's dev UI does: `/run_sse` with the function response in `newMessage`,
`functionCallEventId`, no `invocationId`. Each test compares statuses, frame counts, event shapes
(keys in order, value types; not ids or timestamps), stored event counts, tool runs and state
with the recording; where agentd differs on purpose the test says so (a row of the README's
"Differences from ADK").
"""

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.api.recorded_flows import (
    USER,
    get_session,
    list_invocations,
    logged,
    new_session,
    recorded_flow,
    recording_servers,
    run_sse,
    statuses,
)
from tests.histories import kinds

CONFIRM_HINT = (
    "Please approve or reject the tool call transfer_money() by responding with a "
    "FunctionResponse with an expected ToolConfirmation payload."
)
FLIGHT_HINT = "Confirm the flight to Paris and choose a seat class."

_CONFIRM = '''
from app.tools import FunctionTool

CALL = {"name": "transfer_money", "args": {"amount": 100, "recipient": "alice"}}


def transfer_money(amount: int, recipient: str, tool_context: ToolContext) -> dict:
    """Sends money; asks the person first."""
    _record(tool_context.session_id, what="tool", amount=amount, recipient=recipient)
    tool_context.state["transfers"] = tool_context.state.get("transfers", 0) + 1
    return {"status": "sent", "amount": amount, "recipient": recipient}


root_agent = LlmAgent(
    name="confirm_agent",
    model=RecordingLlm(),
    tools=[FunctionTool(transfer_money, require_confirmation=True)],
    before_model_callback=_label_session,
)
'''

_DYNCONFIRM = '''
CALL = {"name": "book_flight", "args": {"destination": "Paris"}}


def book_flight(destination: str, tool_context: ToolContext) -> dict:
    """Books a flight once the person confirmed it and chose a seat class."""
    confirmation = tool_context.tool_confirmation
    _record(
        tool_context.session_id,
        what="tool",
        confirmation=None if confirmation is None else confirmation.wire(),
    )
    if confirmation is None:
        tool_context.request_confirmation(
            hint="Confirm the flight to Paris and choose a seat class.",
            payload={"seat": "economy"},
        )
        return {"status": "awaiting confirmation"}
    seat = (confirmation.payload or {}).get("seat")
    tool_context.state["booked_seat"] = seat
    return {"status": "booked", "destination": destination, "seat": seat}


root_agent = LlmAgent(
    name="dynconfirm_agent",
    model=RecordingLlm(),
    tools=[book_flight],
    before_model_callback=_label_session,
)
'''

_RESUMABLE = '''
from app.apps import App, ResumabilityConfig
from app.tools import LongRunningFunctionTool

CALL = {"name": "request_approval", "args": {"purpose": "laptop", "amount": 1200}}


def request_approval(purpose: str, amount: int, tool_context: ToolContext) -> None:
    """Asks a manager to approve an expense; the decision comes later."""
    _record(tool_context.session_id, what="tool", purpose=purpose, amount=amount)
    return None


root_agent = LlmAgent(
    name="resume_agent",
    model=RecordingLlm(),
    tools=[LongRunningFunctionTool(request_approval)],
    before_model_callback=_label_session,
)
app = App(
    name="resume_app",
    root_agent=root_agent,
    resumability_config=ResumabilityConfig(is_resumable=True),
)
'''


sqlite_server, postgres_server, served = recording_servers(
    "hitl",
    {"confirm_agent": _CONFIRM, "dynconfirm_agent": _DYNCONFIRM, "resume_app": _RESUMABLE},
)


# -- helpers ------------------------------------------------------------------------------------


def shape(value: Any) -> Any:
    """Keys (in order) and value types, recursively: what must not vary between runs (a
    call id used as a key, in `requestedToolConfirmations`, is only a call id)."""
    if isinstance(value, dict):
        return [("<call id>" if k.startswith("adk-") else k, shape(v)) for k, v in value.items()]
    if isinstance(value, list):
        return [shape(v) for v in value]
    return type(value).__name__


def _confirmation_answer(
    recorded: dict[str, Any], request_frame: dict[str, Any], response: dict[str, Any]
) -> dict[str, Any]:
    """The recorded answer's body, with this run's request call id and event id."""
    call = request_frame["content"]["parts"][0]["functionCall"]
    body: dict[str, Any] = json.loads(json.dumps(recorded["request"]["body"]))
    answer = body["newMessage"]["parts"][0]["functionResponse"]
    answer["id"] = call["id"]
    answer["response"] = response
    body["functionCallEventId"] = request_frame["id"]
    return body


def _assert_same_keys(ours: list[dict[str, Any]], theirs: list[dict[str, Any]]) -> None:
    """Stored events with ADK's keys (as sets: PostgreSQL's JSONB keeps its own key order;
    agentd adds `seq`)."""
    assert [set(e) - {"seq"} for e in ours] == [set(e) for e in theirs]
    assert [set(e["actions"]) for e in ours] == [set(e["actions"]) for e in theirs]


def _with_call_id(content: dict[str, Any], call_id: str) -> dict[str, Any]:
    """A recorded function-response content, answering this run's call `call_id`."""
    copied: dict[str, Any] = json.loads(json.dumps(content))
    copied["parts"][0]["functionResponse"]["id"] = call_id
    return copied


def _asked_as_adk(
    http: httpx.Client, app: str, recorded: dict[str, Any]
) -> tuple[str, list[dict[str, Any]], list[dict[str, Any]]]:
    """A new session of `app`, the frames of the recorded flow's first run on it (with the
    recorded frames' shapes and kinds), and the recorded frames."""
    sid = new_session(http, app)
    asked = recorded["run_sse_user_message"]
    first = run_sse(http, app, sid, asked["request"]["body"])
    theirs: list[dict[str, Any]] = asked["response"]["frames"]
    assert [shape(e) for e in first] == [shape(e) for e in theirs]
    assert kinds(first) == kinds(theirs)
    return sid, first, theirs


def _answered_as_adk(
    http: httpx.Client, app: str, sid: str, answered: dict[str, Any], first: list[dict[str, Any]]
) -> dict[str, Any]:
    """The recorded answer (`answered`) to the confirmation request of the first run's frames
    `first`, sent: the tool's response under the original call id, then the model's text, as
    recorded, under the invocation that asked. The body sent."""
    call = first[0]["content"]["parts"][0]["functionCall"]
    recorded_answer = answered["request"]["body"]["newMessage"]["parts"][0]["functionResponse"]
    body = _confirmation_answer(answered, first[1], recorded_answer["response"])
    second = run_sse(http, app, sid, body)
    theirs = answered["response"]["frames"]
    assert [shape(e) for e in second] == [shape(e) for e in theirs]
    assert [e["content"] for e in second] == [
        _with_call_id(theirs[0]["content"], call["id"]),
        theirs[1]["content"],
    ]
    assert [e["actions"] for e in second] == [e["actions"] for e in theirs]
    assert {e["invocationId"] for e in second} == {first[0]["invocationId"]}
    return body


def _assert_stored_as_adk(
    http: httpx.Client, app: str, sid: str, recorded: dict[str, Any], iid: str, count: int
) -> None:
    """The session as the recorded GET answers it (`count` events, in stream order), every
    event under the invocation `iid`, which completed."""
    session = get_session(http, app, sid)
    theirs = recorded["get_session"]["response"]["json"]
    events = session["events"]
    assert len(events) == len(theirs["events"]) == count
    assert kinds(events) == _swap_request_and_placeholder(kinds(theirs["events"]))
    _assert_same_keys(events, _swap_request_and_placeholder(theirs["events"]))
    assert session["state"] == theirs["state"]
    assert {e["invocationId"] for e in events} == {iid}
    assert statuses(http, app, sid) == [(iid, "completed")]


def _swap_request_and_placeholder(events: list[Any]) -> list[Any]:
    """ADK's GET order of a confirmation's first run turned into its stream order: ADK streams
    (and agentd stores) the `adk_request_confirmation` call before the placeholder response,
    but timestamps the call after it, and its GET sorts by timestamp (a README difference)."""
    return [*events[:2], events[3], events[2], *events[4:]]


# -- require_confirmation: confirmed, denied, answered again ------------------------------------


@pytest.mark.parametrize("flow", ["hitl_confirm", "hitl_deny"])
def test_a_required_confirmation_is_asked_and_answered_as_adk(
    served: tuple[httpx.Client, Path], flow: str
) -> None:
    http, records = served
    recorded = recorded_flow(flow)
    confirmed = flow == "hitl_confirm"
    app = "confirm_agent"

    # The run: the call, the confirmation request, the placeholder response; no model call.
    sid, first, theirs = _asked_as_adk(http, app, recorded)
    call = first[0]["content"]["parts"][0]["functionCall"]
    request = first[1]["content"]["parts"][0]["functionCall"]
    assert request["name"] == "adk_request_confirmation"
    assert request["args"] == {
        "originalFunctionCall": call,
        "toolConfirmation": {"hint": CONFIRM_HINT, "confirmed": False},
    }
    assert request["args"] == {
        **theirs[1]["content"]["parts"][0]["functionCall"]["args"],
        "originalFunctionCall": call,
    }
    assert [e["longRunningToolIds"] for e in first[:2]] == [[], [request["id"]]]
    placeholder = first[2]
    assert placeholder["content"] == _with_call_id(theirs[2]["content"], call["id"])
    assert placeholder["actions"]["skipSummarization"] is True
    assert placeholder["actions"]["requestedToolConfirmations"] == {
        call["id"]: {"hint": CONFIRM_HINT, "confirmed": False}
    }
    iid = first[0]["invocationId"]
    assert {e["invocationId"] for e in first} == {iid}
    assert len(logged(records, sid, "model")) == 1
    (waiting,) = list_invocations(http, app, sid)
    assert (waiting["id"], waiting["status"]) == (iid, "requires_action")
    assert [c["requestCallId"] for c in waiting["requiredAction"]["calls"]] == [request["id"]]

    # The answer, as the dev UI sends it (payload: the original call's arguments): the tool's
    # real response (or the refusal) under the original call id, then the model's text.
    answered = recorded["run_sse_confirm" if confirmed else "run_sse_deny"]
    body = _answered_as_adk(http, app, sid, answered, first)

    if confirmed:
        # The same answer again: 200, an empty stream; the tool does not run again, and the
        # answer is stored again, under the invocation that owns the call.
        assert run_sse(http, app, sid, body) == []
        assert answered["name"] == "run_sse_confirm"
        assert recorded["run_sse_confirm_again"]["response"]["frames"] == []

    # Every event under the invocation that made the call, the answer sent again included.
    _assert_stored_as_adk(http, app, sid, recorded, iid, 8 if confirmed else 7)
    assert len(logged(records, sid, "tool")) == (1 if confirmed else 0)
    assert len(logged(records, sid, "model")) == 2


# -- tool_context.request_confirmation: the model speaks, the invocation still waits -------------


def test_a_dynamic_confirmation_lets_the_model_speak_and_waits_as_adk(
    served: tuple[httpx.Client, Path],
) -> None:
    http, records = served
    recorded = recorded_flow("hitl_request_confirmation")
    app = "dynconfirm_agent"

    # The run: the call, the request (the tool's hint and payload), the tool's own response
    # (no skipSummarization), then the model's text about it, in the same run (4 frames).
    sid, first, theirs = _asked_as_adk(http, app, recorded)
    assert len(first) == len(theirs) == 4
    call = first[0]["content"]["parts"][0]["functionCall"]
    request = first[1]["content"]["parts"][0]["functionCall"]
    expected = {"hint": FLIGHT_HINT, "confirmed": False, "payload": {"seat": "economy"}}
    assert request["args"] == {"originalFunctionCall": call, "toolConfirmation": expected}
    assert first[1]["longRunningToolIds"] == [request["id"]]
    assert first[2]["content"] == _with_call_id(theirs[2]["content"], call["id"])
    assert "skipSummarization" not in first[2]["actions"]
    assert first[2]["actions"]["requestedToolConfirmations"] == {call["id"]: expected}
    assert first[3]["content"] == theirs[3]["content"]
    iid = first[0]["invocationId"]
    assert {e["invocationId"] for e in first} == {iid}
    # The model spoke after the request, and the invocation still waits for the answer.
    (waiting,) = list_invocations(http, app, sid)
    assert (waiting["id"], waiting["status"]) == (iid, "requires_action")
    (required,) = waiting["requiredAction"]["calls"]
    assert required == {
        "functionCallId": call["id"],
        "tool": "book_flight",
        "args": {"destination": "Paris"},
        "hint": FLIGHT_HINT,
        "payload": {"seat": "economy"},
        "kind": "confirmation",
        "requestCallId": request["id"],
    }

    # The answer, the payload edited by the person: the tool runs again with it (the hint is
    # not carried over), then the model answers; all under the invocation that asked.
    answered = recorded["run_sse_confirm_with_payload"]
    _answered_as_adk(http, app, sid, answered, first)
    runs = logged(records, sid, "tool")
    assert [r["confirmation"] for r in runs] == [
        None,
        {"hint": "", "confirmed": True, "payload": {"seat": "business"}},
    ]
    # The model's request ends with the tool's real response right after its call (the
    # placeholder and the model's reply to it are left out, as in ADK).
    theirs = answered["response"]["frames"]
    booked = theirs[0]["content"]["parts"][0]["functionResponse"]["response"]
    assert logged(records, sid, "model")[-1]["contents"] == [
        {"role": "user", "parts": [{"text": "Book me a flight to Paris"}]},
        {"role": "model", "parts": [{"function_call": call}]},
        {
            "role": "user",
            "parts": [
                {"function_response": {"id": call["id"], "name": call["name"], "response": booked}}
            ],
        },
    ]

    _assert_stored_as_adk(http, app, sid, recorded, iid, 8)


# -- a resumable app: no endOfAgent events -------------------------------------------------------


def test_a_resumable_apps_resumed_run_answers_without_adks_end_of_agent_event(
    served: tuple[httpx.Client, Path],
) -> None:
    http, records = served
    recorded = recorded_flow("resume_invocation")
    app = "resume_app"
    sid = new_session(http, app)
    base = {"appName": app, "userId": USER, "sessionId": sid}

    # Step 2: the call alone (the tool returned nothing): the invocation waits.
    asked = recorded["run_user_message"]
    started = http.post("/run", json={**asked["request"]["body"], **base})
    assert started.status_code == 200, started.text
    theirs = asked["response"]["json"]
    assert [shape(e) for e in started.json()] == [shape(e) for e in theirs]
    (call_event,) = started.json()
    call = call_event["content"]["parts"][0]["functionCall"]
    iid = call_event["invocationId"]
    assert call_event["longRunningToolIds"] == [call["id"]]
    assert call_event["author"] == theirs[0]["author"] == "resume_agent"

    # Steps 5 and 6: the result with `invocationId`, then again. ADK answers the model's text,
    # then a content-less event with `actions.endOfAgent: true` (a resumable app's checkpoint);
    # agentd answers the text alone, and stores no such event (README "Differences from ADK").
    for name in ("run_resume_function_response", "run_resume_function_response_again"):
        exchange = recorded[name]
        body = json.loads(json.dumps(exchange["request"]["body"]))
        body["newMessage"]["parts"][0]["functionResponse"]["id"] = call["id"]
        answered = http.post("/run", json={**body, **base, "invocationId": iid})
        assert answered.status_code == exchange["response"]["status"] == 200, answered.text
        text, end_of_agent = exchange["response"]["json"]
        assert end_of_agent["actions"]["endOfAgent"] is True
        assert "content" not in end_of_agent
        assert [shape(e) for e in answered.json()] == [shape(text)]
        assert [e["content"] for e in answered.json()] == [text["content"]]
        assert {e["invocationId"] for e in answered.json()} == {iid}

    events = get_session(http, app, sid)["events"]
    assert kinds(events) == [
        "user: text",
        "resume_agent: functionCall",
        "user: functionResponse",
        "resume_agent: text",
        "user: functionResponse",
        "resume_agent: text",
    ]
    assert not any(e["actions"].get("endOfAgent") for e in events)
    assert {e["invocationId"] for e in events} == {iid}
    assert len(logged(records, sid, "tool")) == 1


# -- answers to calls of ended invocations -------------------------------------------------------


CONFIRM_APP = "confirm_agent"


def _asked_to_confirm(http: httpx.Client) -> tuple[str, list[dict[str, Any]], str]:
    """A new session of `confirm_agent`, the frames of hitl_confirm.json's first run on it
    (the invocation waits) and that invocation's id."""
    sid = new_session(http, CONFIRM_APP)
    asked = recorded_flow("hitl_confirm")["run_sse_user_message"]
    frames = run_sse(http, CONFIRM_APP, sid, asked["request"]["body"])
    assert kinds(frames) == kinds(asked["response"]["frames"])
    return sid, frames, frames[0]["invocationId"]


def test_an_answer_to_a_cancelled_invocations_confirmation_continues_it_under_its_id(
    served: tuple[httpx.Client, Path],
) -> None:
    http, records = served
    sid, first, iid = _asked_to_confirm(http)
    # A new message interrupts the waiting invocation (its open calls get the cancellation);
    # the model asks again, in an invocation of its own.
    interrupting = http.post(
        f"/apps/{CONFIRM_APP}/users/{USER}/sessions/{sid}/invocations",
        json={
            "newMessage": {"role": "user", "parts": [{"text": "Send it now"}]},
            "mode": "wait",
            "multitaskStrategy": "interrupt",
        },
    )
    assert interrupting.status_code in (200, 201), interrupting.text
    second = interrupting.json()["invocation"]
    assert second["status"] == "requires_action"
    assert statuses(http, CONFIRM_APP, sid)[-1] == (iid, "cancelled")

    # ADK has no cancelled invocations: an answer always continues the invocation that made
    # the call. So does agentd's, as a resume with `invocationId` would.
    answered = recorded_flow("hitl_confirm")["run_sse_confirm"]
    args = first[0]["content"]["parts"][0]["functionCall"]["args"]
    body = _confirmation_answer(answered, first[1], {"confirmed": True, "payload": args})
    frames = run_sse(http, CONFIRM_APP, sid, body)

    assert kinds(frames) == [f"{CONFIRM_APP}: functionResponse", f"{CONFIRM_APP}: text"]
    assert {e["invocationId"] for e in frames} == {iid}
    assert len(logged(records, sid, "tool")) == 1
    assert sorted(statuses(http, CONFIRM_APP, sid)) == sorted(
        [(iid, "completed"), (second["id"], "requires_action")]
    )


def test_an_answer_to_an_ordinary_tool_call_starts_an_invocation_of_its_own(
    served: tuple[httpx.Client, Path],
) -> None:
    http, records = served
    sid, first, iid = _asked_to_confirm(http)
    denied = recorded_flow("hitl_deny")["run_sse_deny"]
    run_sse(http, CONFIRM_APP, sid, _confirmation_answer(denied, first[1], {"confirmed": False}))
    call = first[0]["content"]["parts"][0]["functionCall"]

    # A function response to `transfer_money`'s call, which the invocation answered itself and
    # which nothing waits for. ADK would store it under that invocation's id and call the model;
    # agentd never continues a completed invocation that waits for nothing the message answers
    # (README "Differences from ADK"): the message is an invocation of its own. The model
    # answers it; the tool does not run.
    sent = {"id": call["id"], "name": call["name"], "response": {"status": "sent"}}
    frames = run_sse(
        http,
        CONFIRM_APP,
        sid,
        {"userId": USER, "newMessage": {"role": "user", "parts": [{"functionResponse": sent}]}},
    )

    assert [e["content"]["parts"] for e in frames] == [
        [{"text": 'transfer_money answered: {"status": "sent"}'}]
    ]
    (new_id,) = {e["invocationId"] for e in frames}
    assert new_id != iid
    assert len(logged(records, sid, "tool")) == 0
    assert sorted(statuses(http, CONFIRM_APP, sid)) == sorted(
        [(iid, "completed"), (new_id, "completed")]
    )
