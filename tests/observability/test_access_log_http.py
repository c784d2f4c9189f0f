"""The access log over real HTTP (issue 31): one structured `agentd.access` line per answered
request by default, none with `agentd serve --no-access-log` or AGENTD_ACCESS_LOG=false, and
never uvicorn's own line.

Each test reads the server's output after a graceful stop, so every line it wrote is there;
its shutdown lines prove the log was captured at all.
"""

import json
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.live_server import LiveServer, gated_app_env


def served_requests(
    tmp_path: Path, *, env: dict[str, str] | None = None, args: tuple[str, ...] = ()
) -> tuple[list[dict[str, Any]], dict[str, tuple[str, str, int]]]:
    """Serve, send three requests tagged with request ids, stop; the server's JSON log lines
    and each request id's (method, path, status)."""
    server = LiveServer(
        tmp_path, {**gated_app_env(tmp_path, tmp_path / "gates"), **(env or {})}, args=args
    ).start()
    sent: dict[str, tuple[str, str, int]] = {}
    try:
        with httpx.Client(base_url=server.url) as http:
            for method, path, body in [
                ("POST", "/apps/capital_agent/users/u/sessions", {"sessionId": "s1"}),
                ("GET", "/apps/capital_agent/users/u/sessions/s1", None),
                ("GET", "/apps/capital_agent/users/u/sessions/missing", None),
            ]:
                request_id = uuid.uuid4().hex
                answer = http.request(method, path, json=body, headers={"X-Request-ID": request_id})
                sent[request_id] = (method, path, answer.status_code)
    finally:
        server.stop()
    log = [json.loads(line) for line in server.log.read_text().splitlines() if line.startswith("{")]
    return log, sent


def test_each_request_gets_one_structured_access_line(tmp_path: Path) -> None:
    log, sent = served_requests(tmp_path)
    assert [status for _, _, status in sent.values()] == [201, 200, 404]
    for request_id, (method, path, status) in sent.items():
        lines = [line for line in log if line.get("request_id") == request_id]
        access = [line for line in lines if line["logger"] == "agentd.access"]
        assert len(access) == 1, lines
        line = access[0]
        assert (line["method"], line["path"], line["status"]) == (method, path, status)
        assert line["route"].startswith("/apps/{app_name}/users/{user_id}/sessions")
        assert line["duration_ms"] >= 0
        assert line["client"] == "127.0.0.1"
        assert line["message"].startswith(f"{method} {path} {status} ")
    assert not [line for line in log if line["logger"] == "uvicorn.access"]


@pytest.mark.parametrize(
    ("env", "args"),
    [({}, ("--no-access-log",)), ({"AGENTD_ACCESS_LOG": "false"}, ())],
    ids=["flag", "setting"],
)
def test_no_access_log_writes_no_access_line(
    tmp_path: Path, env: dict[str, str], args: tuple[str, ...]
) -> None:
    log, sent = served_requests(tmp_path, env=env, args=args)
    assert len(sent) == 3
    assert not [line for line in log if line["logger"] in ("agentd.access", "uvicorn.access")]
    # The log was captured: the server's own lines, up to its shutdown, are there.
    assert any("Shutting down" in line["message"] for line in log), log


def test_the_flag_turns_the_access_log_on_over_the_setting(tmp_path: Path) -> None:
    log, sent = served_requests(
        tmp_path, env={"AGENTD_ACCESS_LOG": "false"}, args=("--access-log",)
    )
    access = [line for line in log if line["logger"] == "agentd.access"]
    assert {line["request_id"] for line in access} >= set(sent)
