"""A body that is not sent as JSON, over real HTTP: 415 `unsupported-media-type` naming
`Content-Type: application/json`, on `/run` and on session create; JSON without a Content-Type
is taken; the shipped notes_agent answers an off-script message with what it understands."""

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import fresh_sqlite_url
from tests.live_server import LiveServer, build_agents_dir

FORM = "application/x-www-form-urlencoded"
TEXT = "text/plain"


@pytest.fixture(scope="module")
def http(tmp_path_factory: pytest.TempPathFactory, sqlite_template: Path) -> Iterator[httpx.Client]:
    """A client of a server on the shipped (and test) apps."""
    root = tmp_path_factory.mktemp("content-type")
    env = {
        "AGENTD_DATA_DIR": str(root / "data"),
        "AGENTD_AGENTS_DIR": str(build_agents_dir(root / "agents")),
        "AGENTD_DATABASE_URL": fresh_sqlite_url(sqlite_template, root),
    }
    server = LiveServer(root / "server", env).start()
    try:
        with httpx.Client(base_url=server.url, timeout=60) as client:
            yield client
    finally:
        server.stop()


def _session(http: httpx.Client) -> str:
    session_id = uuid.uuid4().hex
    created = http.post("/apps/notes_agent/users/u/sessions", json={"sessionId": session_id})
    assert created.status_code == 201, created.text
    return session_id


def _run_body(session_id: str, text: str = "hello") -> str:
    """A /run body as text, the way curl users write it."""
    message = {"role": "user", "parts": [{"text": text}]}
    return json.dumps(
        {"appName": "notes_agent", "userId": "u", "sessionId": session_id, "newMessage": message}
    )


def _texts(events: list[dict[str, Any]]) -> list[str]:
    return [
        p["text"]
        for e in events
        for p in (e.get("content") or {}).get("parts") or []
        if "text" in p
    ]


def _assert_names_the_header(answer: httpx.Response, content_type: str) -> None:
    assert answer.status_code == 415, answer.text
    assert answer.headers["content-type"].startswith("application/problem+json")
    problem = answer.json()
    assert problem["type"] == "unsupported-media-type"
    assert "Content-Type: application/json" in problem["detail"]
    assert problem["contentType"] == content_type


@pytest.mark.parametrize("content_type", [FORM, TEXT])
def test_run_with_a_body_not_sent_as_json_names_the_content_type(
    http: httpx.Client, content_type: str
) -> None:
    session_id = _session(http)

    answer = http.post(
        "/run", content=_run_body(session_id), headers={"Content-Type": content_type}
    )

    _assert_names_the_header(answer, content_type)
    # Nothing ran: the session holds no event.
    assert http.get(f"/apps/notes_agent/users/u/sessions/{session_id}").json()["events"] == []


@pytest.mark.parametrize("content_type", [FORM, TEXT])
def test_session_create_with_a_body_not_sent_as_json_names_the_content_type(
    http: httpx.Client, content_type: str
) -> None:
    session_id = uuid.uuid4().hex

    answer = http.post(
        "/apps/notes_agent/users/u/sessions",
        content=json.dumps({"sessionId": session_id}),
        headers={"Content-Type": content_type},
    )

    _assert_names_the_header(answer, content_type)
    assert http.get(f"/apps/notes_agent/users/u/sessions/{session_id}").status_code == 404


def test_json_with_its_content_type_works(http: httpx.Client) -> None:
    session_id = _session(http)

    answer = http.post(
        "/run", content=_run_body(session_id), headers={"Content-Type": "application/json"}
    )

    assert answer.status_code == 200, answer.text


def test_json_without_a_content_type_is_taken_as_json(http: httpx.Client) -> None:
    """Friendlier to curl and scripts that leave the header out: the body is read as JSON."""
    session_id = uuid.uuid4().hex
    request = http.build_request(
        "POST", "/apps/notes_agent/users/u/sessions", content=json.dumps({"sessionId": session_id})
    )
    request.headers.pop("Content-Type", None)
    assert "content-type" not in request.headers

    created = http.send(request)
    run = http.build_request("POST", "/run", content=_run_body(session_id))
    run.headers.pop("Content-Type", None)
    ran = http.send(run)

    assert created.status_code == 201, created.text
    assert created.json()["id"] == session_id
    assert ran.status_code == 200, ran.text


def test_a_body_without_a_content_type_that_is_not_json_is_a_json_error(
    http: httpx.Client,
) -> None:
    request = http.build_request("POST", "/run", content="appName=notes_agent")
    request.headers.pop("Content-Type", None)

    answer = http.send(request)

    assert answer.status_code == 422, answer.text
    assert answer.json()["errors"][0]["type"] == "json_invalid"


def test_notes_agent_answers_an_off_script_message_with_what_it_understands(
    http: httpx.Client,
) -> None:
    session_id = _session(http)

    answer = http.post(
        "/run",
        content=_run_body(session_id, "what can you do?"),
        headers={"Content-Type": "application/json"},
    )

    assert answer.status_code == 200, answer.text
    events = answer.json()
    calls = [p for e in events for p in e["content"]["parts"] if "functionCall" in p]
    assert calls == []  # no tool called without its argument
    (text,) = _texts(events)
    assert "note: <text>" in text
    assert "my notes" in text
    assert "validation error" not in text
