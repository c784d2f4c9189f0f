"""Tool credentials over real HTTP (issue 16, item 5): ADK's `adk_request_credential` on `/run`.

A server per backend (SQLite, PostgreSQL) serves an app this module writes: its tool asks for an
API key with `request_credential`. `/run` answers with the function response and ADK's
`adk_request_credential` event; the client's answer (a function response carrying the AuthConfig
with `exchangedAuthCredential` filled in) sent with `invocationId` continues the SAME invocation,
the tool runs again with the credential and its result reaches the model. Answering the same call
again, or naming an invocation that waits for nothing, is 409 `invocation-not-resumable`.
"""

import textwrap
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

from tests.api.served import on_both_backends

APP = "credential_agent"
USER = "u1"
SESSIONS = f"/apps/{APP}/users/{USER}/sessions"

AGENT_SOURCE = '''
from app.agents import LlmAgent
from app.auth import APIKey, AuthConfig, AuthCredential, AuthCredentialTypes
from app.models.scripted import ScriptedLlm
from app.tools.tool_context import ToolContext

CONFIG = AuthConfig(
    auth_scheme=APIKey(**{"in": "header", "name": "X-Api-Key"}),
    raw_auth_credential=AuthCredential(auth_type=AuthCredentialTypes.API_KEY),
)


def fetch_report(topic: str, tool_context: ToolContext) -> dict:
    """The report about `topic` from an API that needs the user's key."""
    credential = tool_context.get_auth_response(CONFIG)
    if credential is None:
        tool_context.request_credential(CONFIG)
        return {"status": "pending", "message": "Waiting for the user's API key."}
    return {"result": f"report on {topic} read with key {credential.api_key}"}


root_agent = LlmAgent(name="credential_agent", model=ScriptedLlm(), tools=[fetch_report])
'''


def _write_app(agents: Path) -> Path:
    folder = agents / APP
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text("from . import agent\n")
    (folder / "agent.py").write_text(textwrap.dedent(AGENT_SOURCE))
    return agents


sqlite_server, postgres_server, http = on_both_backends(
    "auth", lambda root: _write_app(root / "agents")
)


def _new_session(http: httpx.Client) -> str:
    sid = f"s-{uuid.uuid4().hex[:12]}"
    created = http.post(SESSIONS, json={"sessionId": sid})
    assert created.status_code == 201, created.text
    return sid


def _body(sid: str, **fields: Any) -> dict[str, Any]:
    return {"appName": APP, "userId": USER, "sessionId": sid, **fields}


def _parts(event: dict[str, Any]) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = (event.get("content") or {}).get("parts") or []
    return parts


def _invocation(http: httpx.Client, sid: str, iid: str) -> dict[str, Any]:
    got = http.get(f"{SESSIONS}/{sid}/invocations/{iid}")
    assert got.status_code == 200, got.text
    body: dict[str, Any] = got.json()
    return body


def _ask(http: httpx.Client, sid: str) -> list[dict[str, Any]]:
    asked = http.post(
        "/run",
        json=_body(sid, newMessage={"role": "user", "parts": [{"text": "report about sales"}]}),
    )
    assert asked.status_code == 200, asked.text
    events: list[dict[str, Any]] = asked.json()
    return events


def _answer(auth_event: dict[str, Any], api_key: str) -> dict[str, Any]:
    """The client's answer as ADK's dev UI sends it: the AuthConfig, credential filled in."""
    parts = []
    for part in _parts(auth_event):
        call = part["functionCall"]
        config = {
            **call["args"]["authConfig"],
            "exchangedAuthCredential": {"authType": "apiKey", "apiKey": api_key},
        }
        parts.append(
            {"functionResponse": {"id": call["id"], "name": call["name"], "response": config}}
        )
    return {"role": "user", "parts": parts}


def test_run_returns_adk_request_credential_and_the_answer_continues_the_invocation(
    http: httpx.Client,
) -> None:
    sid = _new_session(http)
    events = _ask(http, sid)

    call_event, response_event, auth_event = events
    iid = call_event["invocationId"]
    assert {e["invocationId"] for e in events} == {iid}
    (tool_call,) = [p["functionCall"] for p in _parts(call_event)]
    assert tool_call["name"] == "fetch_report"
    requested = response_event["actions"]["requestedAuthConfigs"]
    assert list(requested) == [tool_call["id"]]
    config = requested[tool_call["id"]]
    assert config["authScheme"] == {"type": "apiKey", "in": "header", "name": "X-Api-Key"}
    assert config["rawAuthCredential"] == {"authType": "apiKey"}
    assert config["credentialKey"].startswith("adk_apiKey_")
    assert auth_event["author"] == "credential_agent"
    (auth_call,) = [p["functionCall"] for p in _parts(auth_event)]
    assert auth_call["name"] == "adk_request_credential"
    assert auth_call["args"] == {"functionCallId": tool_call["id"], "authConfig": config}
    assert auth_event["longRunningToolIds"] == [auth_call["id"]]
    waiting = _invocation(http, sid, iid)  # issue 18: it waits in requires_action
    assert waiting["status"] == "requires_action"
    (required,) = waiting["requiredAction"]["calls"]
    assert required["kind"] == "credential"
    assert required["requestCallId"] == auth_call["id"]
    assert required["functionCallId"] == tool_call["id"]

    answered = http.post(
        "/run", json=_body(sid, invocationId=iid, newMessage=_answer(auth_event, "k-42"))
    )

    assert answered.status_code == 200, answered.text
    resumed = answered.json()
    assert {e["invocationId"] for e in resumed} == {iid}
    tool_result, final = resumed
    (response,) = [p["functionResponse"] for p in _parts(tool_result)]
    assert response["id"] == tool_call["id"]
    assert response["response"] == {"result": "report on sales read with key k-42"}
    assert _parts(final) == [{"text": "report on sales read with key k-42"}]
    assert _invocation(http, sid, iid)["status"] == "completed"
    history = http.get(f"{SESSIONS}/{sid}").json()["events"]
    (user_answer,) = [e for e in history if e["author"] == "user" and "functionResponse" in str(e)]
    assert user_answer["invocationId"] == iid
    assert "k-42" not in str(http.get(f"{SESSIONS}/{sid}").json()["state"])


def test_answering_the_same_call_twice_is_409(http: httpx.Client) -> None:
    sid = _new_session(http)
    events = _ask(http, sid)
    iid = events[0]["invocationId"]
    answer = _answer(events[-1], "k-1")
    first = http.post("/run", json=_body(sid, invocationId=iid, newMessage=answer))
    assert first.status_code == 200, first.text
    history = http.get(f"{SESSIONS}/{sid}").json()["events"]

    again = http.post("/run", json=_body(sid, invocationId=iid, newMessage=answer))

    assert again.status_code == 409, again.text
    assert again.headers["content-type"] == "application/problem+json"
    problem = again.json()
    assert problem["type"] == "invocation-not-resumable"
    assert problem["invocationStatus"] == "completed"
    assert http.get(f"{SESSIONS}/{sid}").json()["events"] == history


def test_an_invocation_waiting_for_nothing_or_a_message_answering_nothing_is_409(
    http: httpx.Client,
) -> None:
    sid = _new_session(http)
    events = _ask(http, sid)
    iid = events[0]["invocationId"]
    text = {"role": "user", "parts": [{"text": "here you go"}]}
    wrong = {
        "role": "user",
        "parts": [
            {
                "functionResponse": {
                    "id": "adk-nope",
                    "name": "adk_request_credential",
                    "response": {},
                }
            }
        ],
    }
    for message in (None, text, wrong):
        body = _body(sid, invocationId=iid) | ({"newMessage": message} if message else {})
        refused = http.post("/run", json=body)
        assert refused.status_code == 409, refused.text
        assert refused.json()["type"] == "invocation-not-resumable"

    # Answered without invocationId, the waiting invocation continues (issue 18: ADK's way of
    # answering, whatever the client knows of invocation ids); once finished it waits for
    # nothing at all.
    plain = http.post("/run", json=_body(sid, newMessage=_answer(events[-1], "k")))
    assert plain.status_code == 200, plain.text
    done_iid = plain.json()[0]["invocationId"]
    assert done_iid == iid
    refused = http.post(
        "/run", json=_body(sid, invocationId=done_iid, newMessage=_answer(events[-1], "k"))
    )
    assert refused.status_code == 409, refused.text
    assert refused.json()["type"] == "invocation-not-resumable"


def test_two_answers_at_once_continue_the_invocation_once(http: httpx.Client) -> None:
    sid = _new_session(http)
    events = _ask(http, sid)
    iid = events[0]["invocationId"]
    body = _body(sid, invocationId=iid, newMessage=_answer(events[-1], "k-2"))

    with ThreadPoolExecutor(max_workers=2) as pool:
        answers = list(pool.map(lambda _: http.post("/run", json=body), range(2)))

    assert sorted(a.status_code for a in answers) == [200, 409], [a.text for a in answers]
    history = http.get(f"{SESSIONS}/{sid}").json()["events"]
    tool_runs = [
        p["functionResponse"]["response"]
        for e in history
        for p in _parts(e)
        if "functionResponse" in p and p["functionResponse"]["name"] == "fetch_report"
    ]
    assert tool_runs[1:] == [{"result": "report on sales read with key k-2"}]
