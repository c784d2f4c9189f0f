"""Human in the loop across processes and agent trees (issue 18, acceptance 3 and 6).

Two replicas serve one PostgreSQL database. A long-running tool leaves its invocation in
`requires_action`; the replica that ran it is SIGKILLed, the wait is made an hour old in the
database, and the result sent to the OTHER replica finishes the invocation. Confirmations asked
by a sub-agent (after a transfer) and by the agent inside an AgentTool are answered over HTTP.
"""

import asyncio
import textwrap
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from tests.conftest import fresh_pg_url
from tests.live_server import LiveServer
from tests.pgserver import PostgresServer

USER = "u1"

TICKET_DESK = '''
from app.agents import LlmAgent
from app.models.scripted import Rule, ScriptedLlm
from app.tools import LongRunningFunctionTool


def open_ticket(summary: str) -> None:
    """Opens a support ticket; its resolution arrives later, from a person."""
    return None


def ticket_desk() -> LlmAgent:
    return LlmAgent(
        name="tickets",
        description="Opens support tickets.",
        model=ScriptedLlm(
            rules=[
                Rule(
                    when_user=r"ticket: (?P<summary>.+)",
                    call=("open_ticket", {"summary": "{summary}"}),
                )
            ]
        ),
        tools=[LongRunningFunctionTool(open_ticket)],
    )
'''

TICKETS = """
from tickets_common import ticket_desk

root_agent = ticket_desk()
"""

WRAPPED_TICKETS = """
from app.agents import LlmAgent
from app.models.scripted import Rule, ScriptedLlm
from app.tools import AgentTool
from tickets_common import ticket_desk

root_agent = LlmAgent(
    name="front",
    model=ScriptedLlm(rules=[Rule(when_user="ticket", call=("tickets", {"request": "{text}"}))]),
    tools=[AgentTool(ticket_desk())],
)
"""

REFUNDER = """
from app.agents import LlmAgent
from app.models.scripted import Rule, ScriptedLlm
from app.tools import FunctionTool
from app.tools.tool_context import ToolContext


def refund(order_id: str, tool_context: ToolContext) -> dict:
    \"\"\"Refunds an order.\"\"\"
    tool_context.state["refunded"] = order_id
    return {"status": "refunded", "order": order_id}


def refunder() -> LlmAgent:
    return LlmAgent(
        name="refunder",
        description="Refunds orders.",
        model=ScriptedLlm(
            rules=[
                # After a transfer its latest user turn is the hand-over context, not the
                # request: the scripted refunder refunds the order the test asks for.
                Rule(when_user="refund|transfer_to_agent", call=("refund", {"order_id": "X9"}))
            ]
        ),
        tools=[FunctionTool(refund, require_confirmation=True)],
    )
"""

DELEGATING = """
from app.agents import LlmAgent
from app.models.scripted import Rule, ScriptedLlm
from refund_common import refunder

root_agent = LlmAgent(
    name="desk",
    model=ScriptedLlm(
        rules=[Rule(when_user="refund", call=("transfer_to_agent", {"agent_name": "refunder"}))]
    ),
    sub_agents=[refunder()],
)
"""

WRAPPING = """
from app.agents import LlmAgent
from app.models.scripted import Rule, ScriptedLlm
from app.tools import AgentTool
from refund_common import refunder

root_agent = LlmAgent(
    name="front",
    model=ScriptedLlm(rules=[Rule(when_user="refund", call=("refunder", {"request": "{text}"}))]),
    tools=[AgentTool(refunder())],
)
"""


@dataclass
class Replicas:
    """Two servers on one database, and that database's URL."""

    first: LiveServer
    second: LiveServer
    database_url: str


def _agents(root: Path) -> Path:
    agents = root / "agents"
    apps = {
        "tickets": TICKETS,
        "wrapped_tickets": WRAPPED_TICKETS,
        "delegating": DELEGATING,
        "wrapping": WRAPPING,
    }
    for name, source in apps.items():
        (agents / name).mkdir(parents=True)
        (agents / name / "agent.py").write_text(textwrap.dedent(source))
    (root / "lib").mkdir()
    (root / "lib" / "refund_common.py").write_text(textwrap.dedent(REFUNDER))
    (root / "lib" / "tickets_common.py").write_text(textwrap.dedent(TICKET_DESK))
    return agents


@pytest.fixture
def replicas(tmp_path: Path, postgres: PostgresServer, pg_template: str) -> Iterator[Replicas]:
    """Two replicas on one PostgreSQL database (stopped afterwards)."""
    url = fresh_pg_url(postgres, pg_template)
    agents = _agents(tmp_path)
    servers = []
    for name in ("first", "second"):
        env = {
            "AGENTD_DATA_DIR": str(tmp_path / name / "data"),
            "AGENTD_AGENTS_DIR": str(agents),
            "AGENTD_DATABASE_URL": url,
            "AGENTD_BLOB_DIR": str(tmp_path / "blobs"),
            "PYTHONPATH": str(tmp_path / "lib"),
        }
        servers.append(LiveServer(tmp_path / name, env).start())
    yield Replicas(servers[0], servers[1], url)
    for server in servers:
        server.stop()


def _base(app: str, sid: str) -> str:
    return f"/apps/{app}/users/{USER}/sessions/{sid}"


def _begin(http: httpx.Client, app: str, text: str) -> tuple[str, dict[str, Any]]:
    sid = f"s-{uuid.uuid4().hex[:12]}"
    assert (
        http.post(f"/apps/{app}/users/{USER}/sessions", json={"sessionId": sid}).status_code == 201
    )
    started = http.post(
        f"{_base(app, sid)}/invocations",
        json={"newMessage": {"role": "user", "parts": [{"text": text}]}, "mode": "wait"},
    )
    assert started.status_code in (200, 201), started.text
    invocation: dict[str, Any] = started.json()["invocation"]
    return sid, invocation


def _settled(http: httpx.Client, app: str, sid: str, iid: str) -> dict[str, Any]:
    deadline = time.monotonic() + 20
    while True:
        body: dict[str, Any] = http.get(f"{_base(app, sid)}/invocations/{iid}").json()
        if body["status"] not in ("queued", "running") or time.monotonic() > deadline:
            return body
        time.sleep(0.05)


async def _an_hour_ago(database_url: str, iid: str) -> None:
    """Make the invocation's wait an hour old, straight in the database."""
    engine = create_async_engine(database_url)
    try:
        async with engine.begin() as connection:
            await connection.execute(
                text(
                    "UPDATE invocations SET end_time = end_time - 3600, "
                    "create_time = create_time - 3600 WHERE id = :iid"
                ),
                {"iid": iid},
            )
    finally:
        await engine.dispose()


def test_a_long_running_result_an_hour_later_on_the_other_replica_after_a_sigkill(
    replicas: Replicas,
) -> None:
    with httpx.Client(base_url=replicas.first.url, timeout=30) as first:
        sid, invocation = _begin(first, "tickets", "ticket: printer on fire")
    iid = invocation["id"]
    assert invocation["status"] == "requires_action"
    (call,) = invocation["requiredAction"]["calls"]
    assert (call["kind"], call["tool"]) == ("result", "open_ticket")
    assert call["args"] == {"summary": "printer on fire"}

    replicas.first.kill()  # SIGKILL while it waits: nothing of it lives in that process
    asyncio.run(_an_hour_ago(replicas.database_url, iid))

    with httpx.Client(base_url=replicas.second.url, timeout=30) as second:
        waiting = _settled(second, "tickets", sid, iid)
        assert waiting["status"] == "requires_action"  # no reaper touched it
        answered = second.post(
            f"{_base('tickets', sid)}/invocations/{iid}/resume",
            json={
                "results": [
                    {"functionCallId": call["functionCallId"], "response": {"status": "resolved"}}
                ]
            },
        )
        assert answered.status_code == 202, answered.text
        final = _settled(second, "tickets", sid, iid)
        assert final["status"] == "completed"
        events = second.get(_base("tickets", sid)).json()["events"]
        responses = [
            p["functionResponse"]
            for e in events
            for p in (e.get("content") or {}).get("parts") or []
            if "functionResponse" in p
        ]
        assert responses == [
            {
                "id": call["functionCallId"],
                "name": "open_ticket",
                "response": {"status": "resolved"},
            }
        ]
        assert all(e["invocationId"] == iid for e in events)


@pytest.mark.parametrize("app", ["delegating", "wrapping"])
def test_a_sub_agent_and_an_agent_tool_that_ask_for_confirmation(
    replicas: Replicas, app: str
) -> None:
    with httpx.Client(base_url=replicas.second.url, timeout=30) as http:
        sid, invocation = _begin(http, app, "refund X9")
        iid = invocation["id"]
        assert invocation["status"] == "requires_action"
        (call,) = invocation["requiredAction"]["calls"]
        assert call["kind"] == "confirmation"
        assert "refunded" not in http.get(_base(app, sid)).json()["state"]

        answered = http.post(
            f"{_base(app, sid)}/invocations/{iid}/resume",
            json={"confirmations": [{"functionCallId": call["functionCallId"], "confirmed": True}]},
        )
        assert answered.status_code == 202, answered.text

        assert _settled(http, app, sid, iid)["status"] == "completed"
        assert http.get(_base(app, sid)).json()["state"]["refunded"] == "X9"


def test_a_long_running_call_inside_an_agent_tool_is_answered_on_the_other_replica(
    replicas: Replicas,
) -> None:
    """The inner tool's call is what the client answers; the wrapped agent goes on with it."""
    app = "wrapped_tickets"
    with httpx.Client(base_url=replicas.first.url, timeout=30) as first:
        sid, invocation = _begin(first, app, "ticket: printer on fire")
    iid = invocation["id"]
    assert invocation["status"] == "requires_action"
    (call,) = invocation["requiredAction"]["calls"]
    assert (call["kind"], call["tool"]) == ("result", "open_ticket")
    assert call["args"] == {"summary": "printer on fire"}

    with httpx.Client(base_url=replicas.second.url, timeout=30) as second:
        answered = second.post(
            f"{_base(app, sid)}/invocations/{iid}/resume",
            json={"results": [{"functionCallId": call["functionCallId"], "response": {"fix": 1}}]},
        )
        assert answered.status_code == 202, answered.text
        assert "requiredAction" not in answered.json()
        final = _settled(second, app, sid, iid)
        assert final["status"] == "completed", final
        events = second.get(_base(app, sid)).json()["events"]
        front_answers = [
            p["functionResponse"]
            for e in events
            if e["author"] == "front"
            for p in (e.get("content") or {}).get("parts") or []
            if "functionResponse" in p
        ]
        # First "waiting" (the wrapped agent's history kept), then the wrapped agent's answer.
        assert [a["name"] for a in front_answers] == ["tickets", "tickets"]
        assert "agentToolEvents" in front_answers[0]["response"]
        assert "fix" in front_answers[1]["response"]["result"]
        replay = second.post(
            f"{_base(app, sid)}/invocations/{iid}/resume",
            json={"results": [{"functionCallId": call["functionCallId"], "response": {"x": 2}}]},
        )
        assert replay.status_code == 409
