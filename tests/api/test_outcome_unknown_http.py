"""No 503 for a committed message (issue 26, acceptance 4).

The server is started with the failpoint `commit-reply-lost:create` (app/db/failpoints.py): the
transaction that stores a new invocation commits, and then the server behaves as if the
database's reply to the COMMIT never arrived, which is what a connection cut at that moment
does. The client must then get `outcome-unknown` naming the invocation, never the 503 that says
nothing was committed; the message was committed, and the run goes on (its lease expires and
the server's claimer takes it over). A retry with the same Idempotency-Key returns the original
invocation's result instead of running the message twice. On SQLite and PostgreSQL, through
`/run` (ADK's route) and `POST .../invocations` (mode wait).
"""

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import fresh_pg_url
from tests.live_server import LiveServer, gated_app_env
from tests.pgserver import PostgresServer
from tests.problems import assert_problem

APP = "capital_agent"
USER = "u1"
SESSIONS = f"/apps/{APP}/users/{USER}/sessions"


def message(text: str) -> dict[str, Any]:
    return {"role": "user", "parts": [{"text": text}]}


@pytest.fixture(params=["sqlite", "postgres"])
def server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[LiveServer]:
    """A server whose next two invocation creations lose their commit's reply."""
    database_url = None
    if request.param == "postgres":
        postgres: PostgresServer = request.getfixturevalue("postgres")
        database_url = fresh_pg_url(postgres, request.getfixturevalue("pg_template"))
    settings = {
        **gated_app_env(tmp_path, tmp_path / "gates", database_url),
        "AGENTD_FAILPOINTS": "commit-reply-lost:create*2",
        "AGENTD_LEASE_SECONDS": "2",
    }
    live = LiveServer(tmp_path / "server", settings).start()
    yield live
    live.stop()


def user_messages(http: httpx.Client, session_id: str) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = http.get(f"{SESSIONS}/{session_id}").json()["events"]
    return [e for e in events if e["author"] == "user"]


def test_a_commit_without_its_reply_is_outcome_unknown_and_a_keyed_retry_gets_the_result(
    server: LiveServer,
) -> None:
    with httpx.Client(base_url=server.url, timeout=60) as http:
        assert http.post(SESSIONS, json={"sessionId": "adk"}).status_code == 201
        body = {
            "appName": APP,
            "userId": USER,
            "sessionId": "adk",
            "newMessage": message("What is the capital of France?"),
        }
        headers = {"Idempotency-Key": "run-1"}

        lost = http.post("/run", json=body, headers=headers)

        assert_problem(lost, 500, "outcome-unknown")
        invocation_id = lost.json()["invocationId"]
        # The message was committed: the invocation exists, and runs without any retry.
        looked_up = http.get(f"{SESSIONS}/adk/invocations/{invocation_id}")
        assert looked_up.status_code == 200, looked_up.text
        retried = http.post("/run", json=body, headers=headers)
        assert retried.status_code == 200, retried.text
        events = retried.json()
        assert events, "the retry returns the original run's events"
        assert {e["invocationId"] for e in events} == {invocation_id}
        assert "Paris" in events[-1]["content"]["parts"][0]["text"]
        assert len(user_messages(http, "adk")) == 1  # stored once, run once

        # The same through our own route.
        assert http.post(SESSIONS, json={"sessionId": "ours"}).status_code == 201
        request = {"newMessage": message("What is the capital of Japan?"), "mode": "wait"}
        url = f"{SESSIONS}/ours/invocations"
        lost = http.post(url, json=request, headers={"Idempotency-Key": "inv-1"})
        assert_problem(lost, 500, "outcome-unknown")
        invocation_id = lost.json()["invocationId"]
        retried = http.post(url, json=request, headers={"Idempotency-Key": "inv-1"})
        assert retried.status_code == 200, retried.text
        result = retried.json()
        assert result["invocation"]["id"] == invocation_id
        assert result["invocation"]["status"] == "completed"
        assert "Tokyo" in result["events"][-1]["content"]["parts"][0]["text"]
        assert len(user_messages(http, "ours")) == 1
