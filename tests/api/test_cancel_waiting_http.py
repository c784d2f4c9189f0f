"""Cancelling invocations that are not running (issue 28), over real HTTP on SQLite and
PostgreSQL: one waiting for the client in `requires_action`, and one queued behind a run.

A waiting invocation has no run to stop, so `POST .../cancel` ends it itself: `cancelled`, its
`requiredAction` cleared and its open calls answered with the cancellation in the same write,
as a cancelled run's are. An answer sent ADK's way afterwards continues it under its id, as it
does any cancelled invocation's (`app.invocations.answers.owner_to_continue`).

Apps: the shipped `refund_agent` (refunds above 100 wait for a confirmation); `two_refunds`,
whose model asks for two such refunds at once and reports what it got back; and `slow`, whose
tool holds its run until the test creates the file it waits for.
"""

import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.api.served import get_json, on_both_backends
from tests.api.waiting_apps import USER, confirmation, invocations, new_session, refund_agents
from tests.histories import assert_whole, parts
from tests.live_server import LiveServer, iter_sse

CANCELLED = "invocation-cancelled"

SLOW = '''
import asyncio
import time
from pathlib import Path

from app.agents import LlmAgent
from app.models.scripted import Rule, ScriptedLlm
from app.tools import FunctionTool
from app.tools.tool_context import ToolContext

RELEASE = Path(__file__).resolve().parents[2] / "release"


async def hold(name: str, tool_context: ToolContext) -> dict:
    """Holds the run until the file `release/<name>` exists (20 s at most)."""
    tool_context.state["held_" + name] = True
    deadline = time.monotonic() + 20
    while not (RELEASE / name).exists() and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    return {"released": name}


root_agent = LlmAgent(
    name="slow",
    model=ScriptedLlm(
        rules=[Rule(when_user=r"hold (?P<name>\\w+)", call=("hold", {"name": "{name}"}))]
    ),
    tools=[FunctionTool(hold)],
)
'''


def _agents(root: Path) -> Path:
    return refund_agents(root, slow=SLOW)


sqlite_server, postgres_server, _ = on_both_backends("cancel-waiting", _agents)


@pytest.fixture(params=["sqlite", "postgres"])
def served(request: pytest.FixtureRequest) -> Iterator[tuple[httpx.Client, Path]]:
    """A client of the backend's server, and the folder `slow`'s tool watches (a file created
    there releases the run holding on that name)."""
    server: LiveServer = request.getfixturevalue(f"{request.param}_server")
    release = Path(server.env["AGENTD_AGENTS_DIR"]).parent / "release"
    release.mkdir(exist_ok=True)
    with httpx.Client(base_url=server.url, timeout=30) as client:
        yield client, release


@pytest.fixture
def http(served: tuple[httpx.Client, Path]) -> httpx.Client:
    """The client of `served`."""
    return served[0]


def _start(http: httpx.Client, app: str, sid: str, text: str, **options: str) -> dict[str, Any]:
    """A new invocation for `text` (mode wait unless `options` say otherwise): the resource."""
    started = http.post(
        invocations(app, sid),
        json={"newMessage": {"role": "user", "parts": [{"text": text}]}, "mode": "wait", **options},
    )
    assert started.status_code in (200, 201, 202), started.text
    body: dict[str, Any] = started.json()
    invocation: dict[str, Any] = body.get("invocation", body)
    return invocation


def _waiting(http: httpx.Client, app: str, text: str) -> tuple[str, dict[str, Any]]:
    """A new session of `app` and, in it, the invocation for `text`, which waits in
    `requires_action`."""
    sid = new_session(http, app)
    waiting = _start(http, app, sid, text)
    assert waiting["status"] == "requires_action"
    return sid, waiting


def _cancel(http: httpx.Client, app: str, sid: str, iid: str) -> dict[str, Any]:
    cancelled = http.post(f"{invocations(app, sid)}/{iid}/cancel")
    assert cancelled.status_code == 200, cancelled.text
    body: dict[str, Any] = cancelled.json()
    return body


def _until(http: httpx.Client, path: str, done: Any) -> dict[str, Any]:
    """GET `path` until `done(body)` holds (20 s at most): the last body."""
    deadline = time.monotonic() + 20
    while True:
        body: dict[str, Any] = get_json(http, path)
        if done(body) or time.monotonic() > deadline:
            return body
        time.sleep(0.05)


def _follow(http: httpx.Client, app: str, sid: str, iid: str) -> list[tuple[str, Any]]:
    """`GET .../events` of the invocation from its start: (event name, data) of every frame."""
    with http.stream("GET", f"{invocations(app, sid)}/{iid}/events") as response:
        assert response.status_code == 200, response.read()
        frames = list(iter_sse(response.iter_lines()))
    return [(f.event, json.loads(f.data) if f.data else None) for f in frames]


def _responses(events: list[dict[str, Any]], iid: str) -> dict[str, dict[str, Any]]:
    """The function responses the invocation's events hold, by call id."""
    return {
        p["functionResponse"]["id"]: p["functionResponse"]
        for e in events
        if e["invocationId"] == iid
        for p in parts(e)
        if "functionResponse" in p
    }


def test_cancelling_a_waiting_invocation_ends_it_cancelled_with_its_open_calls_answered(
    http: httpx.Client,
) -> None:
    sid, waiting = _waiting(http, "two_refunds", "refund both")
    iid = waiting["id"]
    asked = [call["requestCallId"] for call in waiting["requiredAction"]["calls"]]
    assert len(asked) == 2

    cancelled = _cancel(http, "two_refunds", sid, iid)

    assert cancelled["status"] == "cancelled"
    assert cancelled["error"]["type"].endswith(CANCELLED)
    assert "requiredAction" not in cancelled
    assert get_json(http, f"{invocations('two_refunds', sid)}/{iid}") == cancelled
    session = get_json(http, f"/apps/two_refunds/users/{USER}/sessions/{sid}")
    assert_whole(session["events"])  # every call answered, once
    answered = _responses(session["events"], iid)
    for call_id in asked:
        assert answered[call_id]["response"]["error"]["type"].endswith(CANCELLED)
    assert not any(key.startswith("refunded_") for key in session["state"])
    # A follower of the invocation gets its end as it now stands.
    frames = _follow(http, "two_refunds", sid, iid)
    assert frames[-1][0] == "done"
    assert frames[-1][1]["status"] == "cancelled"
    # Cancelling it again changes nothing, and the session takes new messages.
    assert _cancel(http, "two_refunds", sid, iid) == cancelled
    again = _start(http, "two_refunds", sid, "refund both", multitaskStrategy="reject")
    assert again["status"] == "requires_action"


def test_an_answer_sent_adks_way_after_the_cancel_continues_the_invocation_under_its_id(
    http: httpx.Client,
) -> None:
    sid, waiting = _waiting(http, "refund_agent", "refund 150 for order A1")
    iid = waiting["id"]
    (call,) = waiting["requiredAction"]["calls"]
    assert _cancel(http, "refund_agent", sid, iid)["status"] == "cancelled"

    answer = confirmation(call["requestCallId"])
    ran = http.post(
        "/run",
        json={"appName": "refund_agent", "userId": USER, "sessionId": sid, "newMessage": answer},
    )

    assert ran.status_code == 200, ran.text
    assert {event["invocationId"] for event in ran.json()} == {iid}
    invocation = get_json(http, f"{invocations('refund_agent', sid)}/{iid}")
    assert invocation["status"] == "completed"
    session = get_json(http, f"/apps/refund_agent/users/{USER}/sessions/{sid}")
    assert session["state"]["refunds"] == [{"order": "A1", "amount": 150.0}]
    assert [i["id"] for i in get_json(http, invocations("refund_agent", sid))["invocations"]] == [
        iid
    ]


def test_cancelling_an_ended_invocation_returns_it_unchanged(http: httpx.Client) -> None:
    sid = new_session(http, "refund_agent")
    completed = _start(http, "refund_agent", sid, "refund 10 for order B2")
    assert completed["status"] == "completed"
    path = f"{invocations('refund_agent', sid)}/{completed['id']}"
    before = get_json(http, path)

    assert _cancel(http, "refund_agent", sid, completed["id"]) == before
    assert get_json(http, path) == before
    missing = http.post(f"{invocations('refund_agent', sid)}/no-such-invocation/cancel")
    assert missing.status_code == 404
    assert missing.headers["content-type"].startswith("application/problem+json")
    assert missing.json()["type"].endswith("invocation-not-found")


def test_cancelling_a_queued_invocation_ends_it_before_it_runs(
    served: tuple[httpx.Client, Path],
) -> None:
    http, release = served
    sid = new_session(http, "slow")
    path = invocations("slow", sid)
    first, second = (f"{which}{uuid.uuid4().hex[:8]}" for which in "ab")
    try:
        running = _start(http, "slow", sid, f"hold {first}", mode="background")
        assert running["status"] == "running"  # the session's lease is taken as it starts
        queued = _start(
            http, "slow", sid, f"hold {second}", mode="background", multitaskStrategy="enqueue"
        )
        assert get_json(http, f"{path}/{queued['id']}")["status"] == "queued"

        cancelled = _cancel(http, "slow", sid, queued["id"])
    finally:
        (release / first).touch()
        (release / second).touch()

    assert cancelled["status"] == "cancelled"
    assert cancelled["error"]["type"].endswith(CANCELLED)
    ended = _until(http, f"{path}/{running['id']}", lambda i: i["status"] != "running")
    assert ended["status"] == "completed"
    state = get_json(http, f"/apps/slow/users/{USER}/sessions/{sid}")["state"]
    assert f"held_{first}" in state
    assert f"held_{second}" not in state
    assert get_json(http, f"{path}/{queued['id']}")["status"] == "cancelled"
