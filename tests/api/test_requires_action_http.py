"""Human in the loop over real HTTP (issue 18): invocations that wait in `requires_action`.

A server per backend (SQLite, PostgreSQL) serves the shipped `refund_agent` (refunds above 100
need a confirmation) and a test app whose model asks for two such refunds at once. The
invocation ends its step waiting, lists what it waits for in `requiredAction`, and is answered
with `POST .../invocations/{iid}/resume` or ADK's way (a `/run` carrying the function response).
"""

import time
from typing import Any

import httpx

from tests.api.served import on_both_backends
from tests.api.waiting_apps import USER, confirmation, invocations, new_session, refund_agents

sqlite_server, postgres_server, http = on_both_backends("hitl", refund_agents)


def _start(http: httpx.Client, app: str, sid: str, text: str) -> dict[str, Any]:
    """A new invocation for `text`, waited for (mode wait)."""
    started = http.post(
        invocations(app, sid),
        json={"newMessage": {"role": "user", "parts": [{"text": text}]}, "mode": "wait"},
    )
    assert started.status_code in (200, 201), started.text
    body: dict[str, Any] = started.json()
    return body


def _settled(http: httpx.Client, app: str, sid: str, iid: str) -> dict[str, Any]:
    """The invocation once it stopped running (a resume runs in the background)."""
    deadline = time.monotonic() + 20
    while True:
        got = http.get(f"{invocations(app, sid)}/{iid}")
        assert got.status_code == 200, got.text
        body: dict[str, Any] = got.json()
        if body["status"] not in ("queued", "running") or time.monotonic() > deadline:
            return body
        time.sleep(0.05)


def _state(http: httpx.Client, app: str, sid: str) -> dict[str, Any]:
    got = http.get(f"/apps/{app}/users/{USER}/sessions/{sid}")
    assert got.status_code == 200, got.text
    state: dict[str, Any] = got.json()["state"]
    return state


def _texts(http: httpx.Client, app: str, sid: str) -> list[str]:
    events = http.get(f"/apps/{app}/users/{USER}/sessions/{sid}").json()["events"]
    return [
        p["text"]
        for e in events
        if e["author"] != "user"
        for p in (e.get("content") or {}).get("parts") or []
        if p.get("text")
    ]


def test_a_confirmed_refund_runs_once_and_the_answer_reaches_the_model(http: httpx.Client) -> None:
    sid = new_session(http, "refund_agent")
    started = _start(http, "refund_agent", sid, "refund 150 for order A1")
    invocation = started["invocation"]
    iid = invocation["id"]

    assert invocation["status"] == "requires_action"
    (call,) = invocation["requiredAction"]["calls"]
    assert call["tool"] == "refund"
    assert call["kind"] == "confirmation"
    assert call["args"] == {"order_id": "A1", "amount": "150"}
    assert "refunds" not in _state(http, "refund_agent", sid)  # nothing ran yet

    answered = http.post(
        f"{invocations('refund_agent', sid)}/{iid}/resume",
        json={"confirmations": [{"functionCallId": call["functionCallId"], "confirmed": True}]},
    )
    assert answered.status_code == 202, answered.text
    assert answered.json()["id"] == iid

    final = _settled(http, "refund_agent", sid, iid)
    assert final["status"] == "completed"
    assert "requiredAction" not in final
    assert _state(http, "refund_agent", sid)["refunds"] == [{"order": "A1", "amount": 150.0}]
    assert any("refunded" in text for text in _texts(http, "refund_agent", sid))


def test_a_denied_refund_never_runs_and_the_model_sees_the_refusal(http: httpx.Client) -> None:
    sid = new_session(http, "refund_agent")
    invocation = _start(http, "refund_agent", sid, "refund 999 for order B2")["invocation"]
    (call,) = invocation["requiredAction"]["calls"]

    answered = http.post(
        f"{invocations('refund_agent', sid)}/{invocation['id']}/resume",
        json={"confirmations": [{"functionCallId": call["functionCallId"], "confirmed": False}]},
    )
    assert answered.status_code == 202, answered.text

    final = _settled(http, "refund_agent", sid, invocation["id"])
    assert final["status"] == "completed"
    assert "refunds" not in _state(http, "refund_agent", sid)  # the tool never ran
    assert any("rejected" in text for text in _texts(http, "refund_agent", sid))


def test_a_small_refund_runs_without_asking(http: httpx.Client) -> None:
    sid = new_session(http, "refund_agent")
    invocation = _start(http, "refund_agent", sid, "refund 20 for order C3")["invocation"]

    assert invocation["status"] == "completed"
    assert _state(http, "refund_agent", sid)["refunds"] == [{"order": "C3", "amount": 20.0}]


def test_two_parallel_confirmations_answered_in_two_resumes_reach_the_model_in_one_step(
    http: httpx.Client,
) -> None:
    sid = new_session(http, "two_refunds")
    invocation = _start(http, "two_refunds", sid, "refund both")["invocation"]
    iid = invocation["id"]
    calls = {c["args"]["order_id"]: c for c in invocation["requiredAction"]["calls"]}
    assert set(calls) == {"A", "B"}
    resume = f"{invocations('two_refunds', sid)}/{iid}/resume"

    first = http.post(
        resume,
        json={
            "confirmations": [{"functionCallId": calls["A"]["functionCallId"], "confirmed": True}]
        },
    )
    assert first.status_code == 202, first.text
    waiting = _settled(http, "two_refunds", sid, iid)
    assert waiting["status"] == "requires_action"
    assert [c["args"]["order_id"] for c in waiting["requiredAction"]["calls"]] == ["B"]
    assert not any(key.startswith("refunded_") for key in _state(http, "two_refunds", sid))

    second = http.post(
        resume,
        json={
            "confirmations": [{"functionCallId": calls["B"]["functionCallId"], "confirmed": True}]
        },
    )
    assert second.status_code == 202, second.text
    final = _settled(http, "two_refunds", sid, iid)
    assert final["status"] == "completed"
    state = _state(http, "two_refunds", sid)
    assert state["refunded_A"] is True
    assert state["refunded_B"] is True
    # Both results reached the model in one step: its one answer names both orders.
    summary = _texts(http, "two_refunds", sid)[-1]
    assert "'order', 'A'" in summary
    assert "'order', 'B'" in summary


def test_adks_way_a_run_with_the_function_response_and_invocation_id_resumes(
    http: httpx.Client,
) -> None:
    sid = new_session(http, "refund_agent")
    invocation = _start(http, "refund_agent", sid, "refund 300 for order D4")["invocation"]
    (call,) = invocation["requiredAction"]["calls"]

    ran = http.post(
        "/run",
        json={
            "appName": "refund_agent",
            "userId": USER,
            "sessionId": sid,
            "invocationId": invocation["id"],
            "newMessage": confirmation(call["requestCallId"]),
        },
    )

    assert ran.status_code == 200, ran.text
    assert all(e["invocationId"] == invocation["id"] for e in ran.json())
    assert _settled(http, "refund_agent", sid, invocation["id"])["status"] == "completed"
    assert _state(http, "refund_agent", sid)["refunds"] == [{"order": "D4", "amount": 300.0}]


def test_another_users_answer_is_404_and_a_replayed_answer_409_and_neither_changes_anything(
    http: httpx.Client,
) -> None:
    sid = new_session(http, "refund_agent")
    invocation = _start(http, "refund_agent", sid, "refund 400 for order E5")["invocation"]
    iid = invocation["id"]
    (call,) = invocation["requiredAction"]["calls"]
    body = {"confirmations": [{"functionCallId": call["functionCallId"], "confirmed": True}]}

    foreign = http.post(
        f"/apps/refund_agent/users/intruder/sessions/{sid}/invocations/{iid}/resume", json=body
    )
    assert foreign.status_code == 404, foreign.text
    unknown = http.post(
        f"{invocations('refund_agent', sid)}/{iid}/resume",
        json={"confirmations": [{"functionCallId": "no-such-call", "confirmed": True}]},
    )
    assert unknown.status_code == 404, unknown.text
    assert unknown.json()["type"].endswith("function-call-not-found")
    assert _settled(http, "refund_agent", sid, iid)["status"] == "requires_action"
    assert "refunds" not in _state(http, "refund_agent", sid)

    assert (
        http.post(f"{invocations('refund_agent', sid)}/{iid}/resume", json=body).status_code == 202
    )
    assert _settled(http, "refund_agent", sid, iid)["status"] == "completed"
    replayed = http.post(f"{invocations('refund_agent', sid)}/{iid}/resume", json=body)
    assert replayed.status_code == 409, replayed.text
    assert _state(http, "refund_agent", sid)["refunds"] == [{"order": "E5", "amount": 400.0}]


def test_a_new_message_while_waiting_is_rejected_or_cancels_the_waiting_invocation(
    http: httpx.Client,
) -> None:
    sid = new_session(http, "refund_agent")
    invocation = _start(http, "refund_agent", sid, "refund 500 for order F6")["invocation"]
    message = {"role": "user", "parts": [{"text": "refund 10 for order G7"}]}

    rejected = http.post(
        invocations("refund_agent", sid),
        json={"newMessage": message, "mode": "wait", "multitaskStrategy": "reject"},
    )
    assert rejected.status_code == 409, rejected.text
    assert rejected.json()["type"].endswith("session-requires-action")
    assert _settled(http, "refund_agent", sid, invocation["id"])["status"] == "requires_action"

    interrupted = http.post(
        invocations("refund_agent", sid),
        json={"newMessage": message, "mode": "wait", "multitaskStrategy": "interrupt"},
    )
    assert interrupted.status_code in (200, 201), interrupted.text
    assert interrupted.json()["invocation"]["status"] == "completed"
    cancelled = _settled(http, "refund_agent", sid, invocation["id"])
    assert cancelled["status"] == "cancelled"
    # Only the small refund ran; the waiting one was answered with the cancellation.
    assert _state(http, "refund_agent", sid)["refunds"] == [{"order": "G7", "amount": 10.0}]
