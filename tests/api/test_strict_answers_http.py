"""Answers are strict (issue 26), over real HTTP on SQLite and PostgreSQL.

A server per backend serves an app whose tools wait for the client in each way there is: a
refund that needs a confirmation, a report that needs a credential, a long-running ticket whose
result comes later. The refund and the report record every real run in the session state. An
answer that cannot count as one (`confirmed` not a JSON boolean, a function response not named
as its call expects, a user event over AGENTD_MAX_EVENT_BYTES) is refused up front, on
`/resume` and on ADK's `/run` / `/run_sse` alike: nothing runs, no event is stored, the
invocation keeps waiting exactly as it was.
"""

import textwrap
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.api.served import on_both_backends
from tests.problems import assert_problem

APP = "answers_agent"
USER = "u1"
SESSIONS = f"/apps/{APP}/users/{USER}/sessions"
MAX_EVENT_BYTES = 16 * 1024

AGENT_SOURCE = '''
from app.agents import LlmAgent
from app.auth import APIKey, AuthConfig, AuthCredential, AuthCredentialTypes
from app.models.scripted import Rule, ScriptedLlm
from app.tools import FunctionTool, LongRunningFunctionTool
from app.tools.tool_context import ToolContext

CONFIG = AuthConfig(
    auth_scheme=APIKey(**{"in": "header", "name": "X-Api-Key"}),
    raw_auth_credential=AuthCredential(auth_type=AuthCredentialTypes.API_KEY),
)


def refund(order_id: str, tool_context: ToolContext) -> dict:
    """Refunds an order (only once a person confirmed it)."""
    tool_context.state["refunds"] = [*tool_context.state.get("refunds", []), order_id]
    return {"status": "refunded", "order": order_id}


def fetch_report(topic: str, tool_context: ToolContext) -> dict:
    """The report about `topic` from an API that needs the user's key."""
    if tool_context.get_auth_response(CONFIG) is None:
        tool_context.request_credential(CONFIG)
        return {"status": "pending"}
    tool_context.state["reports"] = [*tool_context.state.get("reports", []), topic]
    return {"result": f"report on {topic}"}


def open_ticket(summary: str) -> None:
    """Opens a support ticket; its resolution arrives later, from a person."""
    return None


root_agent = LlmAgent(
    name="answers_agent",
    model=ScriptedLlm(
        rules=[
            Rule(when_user=r"refund (?P<order>\\w+)", call=("refund", {"order_id": "{order}"})),
            Rule(when_user=r"report (?P<topic>\\w+)", call=("fetch_report", {"topic": "{topic}"})),
            Rule(when_user=r"ticket (?P<what>\\w+)", call=("open_ticket", {"summary": "{what}"})),
        ]
    ),
    tools=[
        FunctionTool(refund, require_confirmation=True),
        fetch_report,
        LongRunningFunctionTool(open_ticket),
    ],
)
'''


def _write_app(root: Path) -> Path:
    folder = root / "agents" / APP
    folder.mkdir(parents=True)
    (folder / "agent.py").write_text(textwrap.dedent(AGENT_SOURCE))
    return root / "agents"


sqlite_server, postgres_server, http = on_both_backends(
    "strict-answers", _write_app, {"AGENTD_MAX_EVENT_BYTES": str(MAX_EVENT_BYTES)}
)

#: How an answer reaches the server: `/resume`, or ADK's function responses in a `/run` or
#: `/run_sse` message (`/run` with or without the invocation's id).
PATHS = ["resume", "run", "run_sse", "run_with_invocation_id"]
ADK_PATHS = ["run", "run_sse"]
NOT_BOOLEANS = ["yes", 1, "true", None]


def _waiting(http: httpx.Client, text: str) -> tuple[str, dict[str, Any]]:
    """A new session and an invocation of it that waits for the client's answer to `text`."""
    sid = f"s-{uuid.uuid4().hex[:12]}"
    assert http.post(SESSIONS, json={"sessionId": sid}).status_code == 201
    started = http.post(
        f"{SESSIONS}/{sid}/invocations",
        json={"newMessage": {"role": "user", "parts": [{"text": text}]}, "mode": "wait"},
    )
    assert started.status_code in (200, 201), started.text
    invocation: dict[str, Any] = started.json()["invocation"]
    assert invocation["status"] == "requires_action", invocation
    return sid, invocation


def _snapshot(http: httpx.Client, sid: str, iid: str) -> tuple[list[str], Any, Any]:
    """The session's event ids and state, and the invocation as the API shows it."""
    session = http.get(f"{SESSIONS}/{sid}")
    invocation = http.get(f"{SESSIONS}/{sid}/invocations/{iid}")
    assert session.status_code == invocation.status_code == 200
    body = session.json()
    return [e["id"] for e in body["events"]], body["state"], invocation.json()


def _function_response(call_id: str, name: str, response: dict[str, Any]) -> dict[str, Any]:
    return {"functionResponse": {"id": call_id, "name": name, "response": response}}


def _adk_answer(
    http: httpx.Client, path: str, sid: str, iid: str, part: dict[str, Any]
) -> httpx.Response:
    """ADK's answer: a `/run` (`/run_sse`) message carrying the function response."""
    body: dict[str, Any] = {
        "appName": APP,
        "userId": USER,
        "sessionId": sid,
        "newMessage": {"role": "user", "parts": [part]},
    }
    if path == "run_with_invocation_id":
        body["invocationId"] = iid
    return http.post("/run_sse" if path == "run_sse" else "/run", json=body)


def _confirm(
    http: httpx.Client, path: str, sid: str, invocation: dict[str, Any], answer: dict[str, Any]
) -> httpx.Response:
    """Answer the invocation's one confirmation with `answer` (`{"confirmed": ..., ...}`)."""
    (call,) = invocation["requiredAction"]["calls"]
    if path == "resume":
        confirmation = {"functionCallId": call["functionCallId"], **answer}
        return http.post(
            f"{SESSIONS}/{sid}/invocations/{invocation['id']}/resume",
            json={"confirmations": [confirmation]},
        )
    part = _function_response(call["requestCallId"], "adk_request_confirmation", answer)
    return _adk_answer(http, path, sid, invocation["id"], part)


def _settled(http: httpx.Client, sid: str, iid: str) -> dict[str, Any]:
    """The invocation once it stopped running (a resume runs in the background)."""
    deadline = time.monotonic() + 20
    while True:
        got = http.get(f"{SESSIONS}/{sid}/invocations/{iid}")
        assert got.status_code == 200, got.text
        body: dict[str, Any] = got.json()
        if body["status"] not in ("queued", "running"):
            return body
        assert time.monotonic() < deadline, body
        time.sleep(0.05)


@pytest.mark.parametrize("path", PATHS)
def test_a_confirmation_that_is_not_a_json_boolean_is_422_and_nothing_runs(
    http: httpx.Client, path: str
) -> None:
    sid, invocation = _waiting(http, "refund A1")
    before = _snapshot(http, sid, invocation["id"])
    # The resume body is validated as a request; ADK's answer by the one answers check.
    expected = "request-validation-failed" if path == "resume" else "invalid-answer"

    for value in NOT_BOOLEANS:
        answered = _confirm(http, path, sid, invocation, {"confirmed": value})
        # `/run_sse` refuses before its stream starts: a problem, not a frame.
        assert_problem(answered, 422, expected)
        assert any(e["loc"][-1] == "confirmed" for e in answered.json()["errors"])
        assert _snapshot(http, sid, invocation["id"]) == before
    assert "refunds" not in before[1]

    # Still waiting, and a real answer still counts: a denial, so the refund never runs.
    denied = _confirm(http, path, sid, invocation, {"confirmed": False})
    assert denied.status_code in (200, 202), denied.text
    assert _settled(http, sid, invocation["id"])["status"] == "completed"
    events, state, _ = _snapshot(http, sid, invocation["id"])
    assert len(events) > len(before[0])
    assert "refunds" not in state


@pytest.mark.parametrize("path", ADK_PATHS)
def test_an_adk_confirmation_without_confirmed_or_in_adks_wrapper_with_a_string_is_422(
    http: httpx.Client, path: str
) -> None:
    sid, invocation = _waiting(http, "refund B2")
    before = _snapshot(http, sid, invocation["id"])

    for answer in ({}, {"payload": {"ok": True}}, {"response": '{"confirmed": "yes"}'}):
        assert_problem(_confirm(http, path, sid, invocation, answer), 422, "invalid-answer")
        assert _snapshot(http, sid, invocation["id"]) == before

    # ADK's wrapper with a real boolean is an answer.
    confirmed = _confirm(http, path, sid, invocation, {"response": '{"confirmed": true}'})
    assert confirmed.status_code == 200, confirmed.text
    assert _snapshot(http, sid, invocation["id"])[1]["refunds"] == ["B2"]


# What each waiting call expects, and function responses to its request id named otherwise.
WRONG_NAMES = {
    "refund C3": ("refund", "fetch_report", "open_ticket", "adk_request_credential"),
    "report sales": ("fetch_report", "adk_request_confirmation", "refund"),
    "ticket printer": ("adk_request_confirmation", "refund", "adk_request_credential"),
}


@pytest.mark.parametrize("path", ADK_PATHS)
@pytest.mark.parametrize("text", list(WRONG_NAMES))
def test_an_adk_answer_not_named_as_its_call_expects_is_422_and_nothing_runs(
    http: httpx.Client, path: str, text: str
) -> None:
    sid, invocation = _waiting(http, text)
    (call,) = invocation["requiredAction"]["calls"]
    before = _snapshot(http, sid, invocation["id"])

    for name in WRONG_NAMES[text]:
        part = _function_response(call["requestCallId"], name, {"confirmed": True})
        answered = _adk_answer(http, path, sid, invocation["id"], part)
        assert_problem(answered, 422, "invalid-answer")
        assert answered.json()["errors"][0]["functionCallId"] == call["functionCallId"]
        assert _snapshot(http, sid, invocation["id"]) == before
    assert "refunds" not in before[1]
    assert "reports" not in before[1]


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("refund D4", "results"),
        ("ticket monitor", "confirmations"),
        ("report costs", "results"),
        ("report costs", "confirmations"),
    ],
)
def test_a_resume_answer_of_the_wrong_kind_is_422_and_nothing_runs(
    http: httpx.Client, text: str, field: str
) -> None:
    sid, invocation = _waiting(http, text)
    (call,) = invocation["requiredAction"]["calls"]
    before = _snapshot(http, sid, invocation["id"])
    item: dict[str, Any] = {"functionCallId": call["functionCallId"]}
    item |= {"confirmed": True} if field == "confirmations" else {"response": {"ok": True}}

    answered = http.post(
        f"{SESSIONS}/{sid}/invocations/{invocation['id']}/resume", json={field: [item]}
    )
    assert_problem(answered, 422, "invalid-answer")
    assert answered.json()["errors"][0]["kind"] == call["kind"]
    assert _snapshot(http, sid, invocation["id"]) == before


@pytest.mark.parametrize("path", ["resume", "run", "run_sse"])
def test_an_answer_over_the_event_size_limit_is_413_before_anything_is_queued(
    http: httpx.Client, path: str
) -> None:
    sid, invocation = _waiting(http, "refund E5")
    before = _snapshot(http, sid, invocation["id"])

    big = {"confirmed": True, "payload": {"note": "x" * MAX_EVENT_BYTES}}
    assert_problem(_confirm(http, path, sid, invocation, big), 413, "event-too-large")
    assert _snapshot(http, sid, invocation["id"]) == before

    small = {"confirmed": True, "payload": {"note": "x" * 100}}
    confirmed = _confirm(http, path, sid, invocation, small)
    assert confirmed.status_code in (200, 202), confirmed.text


def test_a_long_running_result_over_the_event_size_limit_is_413_on_resume(
    http: httpx.Client,
) -> None:
    sid, invocation = _waiting(http, "ticket laptop")
    (call,) = invocation["requiredAction"]["calls"]
    before = _snapshot(http, sid, invocation["id"])

    result = {"functionCallId": call["functionCallId"], "response": {"note": "y" * 20_000}}
    answered = http.post(
        f"{SESSIONS}/{sid}/invocations/{invocation['id']}/resume", json={"results": [result]}
    )
    assert_problem(answered, 413, "event-too-large")
    assert _snapshot(http, sid, invocation["id"]) == before


@pytest.mark.parametrize("answer", ["wrong-name", "too-large"])
def test_an_answer_sent_with_invocation_id_is_checked_like_the_others(
    http: httpx.Client, answer: str
) -> None:
    sid, invocation = _waiting(http, "refund F6")
    (call,) = invocation["requiredAction"]["calls"]
    before = _snapshot(http, sid, invocation["id"])
    if answer == "wrong-name":
        part = _function_response(call["requestCallId"], "refund", {"confirmed": True})
        expected = (422, "invalid-answer")
    else:
        response = {"confirmed": True, "payload": "z" * MAX_EVENT_BYTES}
        part = _function_response(call["requestCallId"], "adk_request_confirmation", response)
        expected = (413, "event-too-large")

    answered = _adk_answer(http, "run_with_invocation_id", sid, invocation["id"], part)
    assert (answered.status_code, answered.json().get("type")) == expected
    assert _snapshot(http, sid, invocation["id"]) == before
