"""AGENTD_ACTION_TIMEOUT_SECONDS: an invocation that waits too long is failed or continued
(issue 18). Servers with a half-second timeout (their reaper runs every half second) serve the
shipped refund_agent over real HTTP; nothing answers its confirmation."""

import shutil
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import fresh_sqlite_url
from tests.live_server import LiveServer

PROJECT = Path(__file__).resolve().parents[2]
APP = "refund_agent"
SESSIONS = f"/apps/{APP}/users/u1/sessions"


@pytest.fixture(params=["fail", "continue"])
def server(
    request: pytest.FixtureRequest, tmp_path: Path, sqlite_template: Path
) -> Iterator[tuple[str, LiveServer]]:
    """A server whose waiting invocations expire after half a second, with the policy."""
    shutil.copytree(PROJECT / "agents" / APP, tmp_path / "agents" / APP)
    env = {
        "AGENTD_DATA_DIR": str(tmp_path / "data"),
        "AGENTD_AGENTS_DIR": str(tmp_path / "agents"),
        "AGENTD_DATABASE_URL": fresh_sqlite_url(sqlite_template, tmp_path),
        "AGENTD_ACTION_TIMEOUT_SECONDS": "0.5",
        "AGENTD_ACTION_TIMEOUT_POLICY": request.param,
        "AGENTD_LEASE_SECONDS": "1",
    }
    live = LiveServer(tmp_path / "server", env).start()
    yield request.param, live
    live.stop()


def _settled(http: httpx.Client, sid: str, iid: str) -> dict[str, Any]:
    deadline = time.monotonic() + 20
    while True:
        body: dict[str, Any] = http.get(f"{SESSIONS}/{sid}/invocations/{iid}").json()
        if body["status"] not in ("queued", "running", "requires_action"):
            return body
        assert time.monotonic() < deadline, body
        time.sleep(0.1)


def test_an_unanswered_confirmation_expires_as_configured(
    server: tuple[str, LiveServer],
) -> None:
    policy, live = server
    with httpx.Client(base_url=live.url, timeout=30) as http:
        sid = f"s-{uuid.uuid4().hex[:12]}"
        assert http.post(SESSIONS, json={"sessionId": sid}).status_code == 201
        started = http.post(
            f"{SESSIONS}/{sid}/invocations",
            json={
                "newMessage": {"role": "user", "parts": [{"text": "refund 700 for order Z1"}]},
                "mode": "wait",
            },
        ).json()["invocation"]
        assert started["status"] == "requires_action"
        (call,) = started["requiredAction"]["calls"]

        final = _settled(http, sid, started["id"])

        session = http.get(f"{SESSIONS}/{sid}").json()
        assert "refunds" not in session["state"]  # the refund never ran
        responses = [
            p["functionResponse"]
            for e in session["events"]
            for p in (e.get("content") or {}).get("parts") or []
            if "functionResponse" in p
        ]
        if policy == "fail":
            assert final["status"] == "failed"
            assert final["error"]["type"] == "action-expired"
            # Every open call got the expiry as its answer, so the history stays valid.
            (answer,) = [r for r in responses if r["id"] == call["requestCallId"]]
            assert answer["response"]["error"]["type"] == "action-expired"
        else:
            assert final["status"] == "completed"
            (denial,) = [r for r in responses if r["id"] == call["requestCallId"]]
            assert denial["response"] == {"confirmed": False}
            assert {"id": call["functionCallId"], "name": "refund"} in [
                {"id": r["id"], "name": r["name"]} for r in responses
            ]
            assert any(r["response"] == {"error": "This tool call is rejected."} for r in responses)
