"""Compaction and token budgets over real HTTP (issue 30), on SQLite and PostgreSQL.

The `compacting_agent` test app compacts every 2 invocations with 1 of overlap; its model
records every request, its summarizer joins what it read (and raises on "explode").
"""

import json
import uuid
from pathlib import Path
from typing import Any

import httpx

from app.agents.contents import SUMMARY_LEAD
from tests.api.served import get_json
from tests.backends import module_servers
from tests.live_server import LiveServer, gated_app_env, wait_until

APP = "compacting_agent"
SESSIONS = f"/apps/{APP}/users/u1/sessions"

#: An event with `actions.compaction` as ADK 2.13 writes it (LlmEventSummarizer, serialized with
#: `model_dump(mode="json", by_alias=True, exclude_none=True)`), trimmed to the compaction.
ADK_COMPACTION = {
    "startTimestamp": 1767225600.5,
    "endTimestamp": 1767225611.25,
    "compactedContent": {"parts": [{"text": "The user asked for X."}], "role": "model"},
}


class Deployment:
    """A server on one backend and its test app's gates folder."""

    def __init__(self, root: Path, database_url: str) -> None:
        self.gates = root / "gates"
        self.server = LiveServer(root / "server", gated_app_env(root, self.gates, database_url))

    def requests(self, sid: str) -> list[list[dict[str, Any]]]:
        """The contents of every model request of the session, in order."""
        path = self.gates / f"{sid}.requests.jsonl"
        return [json.loads(line) for line in path.read_text().splitlines()]

    def summaries(self) -> list[list[str]]:
        """What each summarizer call read."""
        path = self.gates / "summaries.log"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines()]


sqlite_deployment, postgres_deployment, deployment, http = module_servers("compaction", Deployment)


def _session(http: httpx.Client, state: dict[str, Any] | None = None) -> str:
    sid = f"s-{uuid.uuid4().hex[:8]}"
    created = http.post(SESSIONS, json={"sessionId": sid, "state": state or {}})
    assert created.status_code == 201, created.text
    return sid


def _run(http: httpx.Client, sid: str, text: str) -> list[dict[str, Any]]:
    body = {
        "appName": APP,
        "userId": "u1",
        "sessionId": sid,
        "newMessage": {"role": "user", "parts": [{"text": text}]},
    }
    answered = http.post("/run", json=body)
    assert answered.status_code == 200, answered.text
    events: list[dict[str, Any]] = answered.json()
    return events


def _events(http: httpx.Client, sid: str) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = get_json(http, f"{SESSIONS}/{sid}")["events"]
    return events


def _compactions(http: httpx.Client, sid: str) -> list[dict[str, Any]]:
    return [e for e in _events(http, sid) if "compaction" in e.get("actions", {})]


def _texts(contents: list[dict[str, Any]]) -> list[str]:
    return ["".join(p.get("text", "") for p in c.get("parts", [])) for c in contents]


def _invocations(http: httpx.Client, sid: str) -> list[dict[str, Any]]:
    listed: list[dict[str, Any]] = get_json(http, f"{SESSIONS}/{sid}/invocations")["invocations"]
    return listed


def test_requests_carry_the_latest_summary_the_overlap_and_later_events(
    http: httpx.Client, deployment: Deployment
) -> None:
    sid = _session(http)
    said = [f"{sid}-t{i}" for i in range(1, 7)]
    for text in said[:3]:
        answer = _run(http, sid, text)
        assert not any("compaction" in e.get("actions", {}) for e in answer)
    # Three invocations: the first two are summarized, the third stays raw (overlap 1).
    wait_until(lambda: len(_compactions(http, sid)) == 1)
    (first,) = _compactions(http, sid)
    assert first["author"] == "user"
    assert set(first["actions"]["compaction"]) == set(ADK_COMPACTION)
    assert first["actions"]["compaction"]["compactedContent"]["role"] == "model"
    summary_a = first["actions"]["compaction"]["compactedContent"]["parts"][0]["text"]
    assert summary_a == f"S[{said[0]} | echo: {said[0]} | {said[1]} | echo: {said[1]}]"
    stored = _events(http, sid)
    covered = first["customMetadata"]["agentdCompaction"]
    assert covered == {"startSeq": stored[0]["seq"], "endSeq": stored[3]["seq"]}
    assert first["invocationId"] not in {e["invocationId"] for e in stored[:6]}

    _run(http, sid, said[3])
    assert _texts(deployment.requests(sid)[-1]) == [
        f"{SUMMARY_LEAD}{summary_a}",
        said[2],
        f"echo: {said[2]}",
        said[3],
    ]
    _run(http, sid, said[4])
    # The second summary is made from the first one and the raw events after it.
    wait_until(lambda: len(_compactions(http, sid)) == 2)
    second = _compactions(http, sid)[1]
    summary_b = second["actions"]["compaction"]["compactedContent"]["parts"][0]["text"]
    assert summary_b == (
        f"S[{summary_a} | {said[2]} | echo: {said[2]} | {said[3]} | echo: {said[3]}]"
    )
    assert second["customMetadata"]["agentdCompaction"]["startSeq"] == stored[0]["seq"]

    _run(http, sid, said[5])
    request = _texts(deployment.requests(sid)[-1])
    assert request == [f"{SUMMARY_LEAD}{summary_b}", said[4], f"echo: {said[4]}", said[5]]
    assert sum(text.startswith(SUMMARY_LEAD) for text in request) == 1  # only the latest

    # The stored history is complete: every invocation's events and both compactions.
    events = _events(http, sid)
    assert len(events) == 6 * 2 + 2
    user_texts = [
        _texts([e["content"]])[0] for e in events if e["author"] == "user" and "content" in e
    ]
    assert user_texts == said
    assert all(i["status"] == "completed" for i in _invocations(http, sid))


def test_a_failing_summarizer_leaves_the_session_unchanged(
    http: httpx.Client, deployment: Deployment
) -> None:
    sid = _session(http, state={"kept": 1})
    said = [f"{sid}-one", f"{sid}-explode", f"{sid}-three", f"{sid}-four"]
    for text in said[:3]:
        _run(http, sid, text)
    # The compaction was tried (and raised); the next invocation's end tries it again.
    wait_until(lambda: any(said[1] in texts for texts in deployment.summaries()))
    _run(http, sid, said[3])
    wait_until(lambda: any(said[2] in texts for texts in deployment.summaries()))
    session = get_json(http, f"{SESSIONS}/{sid}")
    assert not [e for e in session["events"] if "compaction" in e.get("actions", {})]
    assert len(session["events"]) == 4 * 2
    assert session["state"] == {"kept": 1}
    statuses = [i["status"] for i in _invocations(http, sid)]
    assert statuses == ["completed"] * 4
    # Without a summary, the model still sees the whole history.
    assert _texts(deployment.requests(sid)[-1])[0] == said[0]


def test_max_context_tokens_is_applied_to_the_request(
    http: httpx.Client, deployment: Deployment
) -> None:
    sid = _session(http)
    long = "x" * 400
    _run(http, sid, f"{sid}-a {long}")
    body = {
        "newMessage": {"role": "user", "parts": [{"text": f"{sid}-b"}]},
        "runConfig": {"maxContextTokens": 20},
        "mode": "wait",
    }
    created = http.post(f"{SESSIONS}/{sid}/invocations", json=body)
    assert created.status_code in (200, 201), created.text
    assert created.json()["invocation"]["status"] == "completed", created.text
    assert _texts(deployment.requests(sid)[-1]) == [f"{sid}-b"]
    # Without a budget the same history is sent whole.
    _run(http, sid, f"{sid}-c")
    assert _texts(deployment.requests(sid)[-1])[0] == f"{sid}-a {long}"


def test_max_context_tokens_must_be_positive(http: httpx.Client) -> None:
    sid = _session(http)
    body = {
        "newMessage": {"role": "user", "parts": [{"text": "hi"}]},
        "runConfig": {"maxContextTokens": 0},
    }
    refused = http.post(f"{SESSIONS}/{sid}/invocations", json=body)
    assert refused.status_code == 422
    assert refused.headers["content-type"].startswith("application/problem+json")
