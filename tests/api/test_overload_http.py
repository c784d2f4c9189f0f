"""Overload over real HTTP (issue 31): past AGENTD_MAX_INFLIGHT_INVOCATIONS a new invocation,
through any door, is 503 problem+json `overloaded` with Retry-After, and nothing of it is
stored; once the runs in flight end, the same request runs.

The `gated_agent` test app's tool waits until the test creates `<gates>/<session>.open`, which
holds the admitted invocations in flight.
"""

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.live_server import LiveServer, gated_app_env, wait_until
from tests.problems import assert_problem

APP = "gated_agent"
SESSIONS = f"/apps/{APP}/users/u1/sessions"
MESSAGE = {"role": "user", "parts": [{"text": "go"}]}


@pytest.fixture
def server(tmp_path: Path) -> Iterator[LiveServer]:
    """A server that runs at most two invocations at once."""
    env = {
        **gated_app_env(tmp_path, tmp_path / "gates"),
        "AGENTD_MAX_INFLIGHT_INVOCATIONS": "2",
    }
    live = LiveServer(tmp_path / "server", env).start()
    yield live
    live.stop()


def _status(http: httpx.Client, sid: str, iid: str) -> Any:
    return http.get(f"{SESSIONS}/{sid}/invocations/{iid}").json()["status"]


def _run_body(sid: str) -> dict[str, Any]:
    return {"appName": APP, "userId": "u1", "sessionId": sid, "newMessage": MESSAGE}


def test_past_the_bound_every_door_answers_503_and_stores_nothing(
    server: LiveServer, tmp_path: Path
) -> None:
    with httpx.Client(base_url=server.url, timeout=30) as http:
        for sid in ("s1", "s2", "s3"):
            assert http.post(SESSIONS, json={"sessionId": sid}).status_code == 201
        running = {}
        for sid in ("s1", "s2"):
            started = http.post(
                f"{SESSIONS}/{sid}/invocations", json={"newMessage": MESSAGE, "mode": "background"}
            )
            assert started.status_code == 202, started.text
            running[sid] = started.json()["id"]
        wait_until(lambda: all(_status(http, s, i) == "running" for s, i in running.items()))

        refused = [
            http.post("/run", json=_run_body("s3")),
            http.post("/run_sse", json=_run_body("s3")),
            http.post(
                f"{SESSIONS}/s3/invocations", json={"newMessage": MESSAGE, "mode": "background"}
            ),
            http.post(f"{SESSIONS}/s3/invocations", json={"newMessage": MESSAGE, "mode": "wait"}),
        ]
        for answer in refused:
            assert_problem(answer, 503, "overloaded")
            assert answer.headers["Retry-After"] == "1"
            assert "2 invocations" in answer.json()["detail"]
        # Nothing of the refused runs was stored: no event, no invocation, no lease.
        session = http.get(f"{SESSIONS}/s3").json()
        assert session["events"] == []
        assert http.get(f"{SESSIONS}/s3/invocations").json()["invocations"] == []
        metrics = http.get("/metrics").text
        assert "agentd_invocations_refused_total 4.0" in metrics
        # Expected and counted: no error line, no traceback per refusal.
        log = server.log.read_text()
        assert "Too many invocations in flight" not in log
        assert "Traceback" not in log

        for sid in running:
            (tmp_path / "gates" / f"{sid}.open").touch()
        wait_until(lambda: all(_status(http, s, i) == "completed" for s, i in running.items()))
        (tmp_path / "gates" / "s3.open").touch()
        answered = http.post("/run", json=_run_body("s3"))
        assert answered.status_code == 200, answered.text
        assert answered.json()
        assert http.get(f"{SESSIONS}/s3").json()["events"][0]["author"] == "user"
