"""A failure while a stream is open (issue 26): every stream ends with an error frame carrying the
problem, never cut. In process, with the manager's `follow` failing after the agent's first
event; the same against real processes and a stopped PostgreSQL is
tests/faults/test_stream_faults.py."""

import json
import logging
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.errors import DatabaseUnavailable
from app.invocations.channel import StreamItem
from app.invocations.manager import InvocationManager, RunHandle
from app.main import create_app
from app.settings import Settings
from tests.live_server import Frame, iter_sse

SESSIONS = "/apps/capital_agent/users/u1/sessions"
QUESTION = {"role": "user", "parts": [{"text": "What is the capital of France?"}]}
#: Events a stream sends before the failure: the agent's call, and the user's message too where
#: the stream is ours (ADK's /run_sse does not send it).
EVENTS_BEFORE = {"run_sse": 1, "stream": 2, "events": 2}
RUN = {"appName": "capital_agent", "userId": "u1", "sessionId": "run_sse", "newMessage": QUESTION}


@pytest.fixture
def client(api_settings: Settings) -> Iterator[TestClient]:
    """An app with a capital_agent session per kind of stream (a stream cut short leaves its
    run going on)."""
    with TestClient(create_app(api_settings)) as test_client:
        for session_id in EVENTS_BEFORE:
            assert test_client.post(SESSIONS, json={"sessionId": session_id}).status_code == 201
        yield test_client


def fail_follow_after_the_call(client: TestClient, error: Exception) -> None:
    """Make the manager's `follow` raise `error` after the agent's first event (its call)."""
    manager: InvocationManager = client.app.state.invocation_manager  # type: ignore[attr-defined]
    real = manager.follow

    async def follow(
        handle: RunHandle, *, after_seq: int | None = None
    ) -> AsyncIterator[StreamItem]:
        async for item in real(handle, after_seq=after_seq):
            yield item
            if item.event is not None and item.event.author != "user":
                raise error

    manager.follow = follow  # type: ignore[method-assign]


@dataclass
class Stream:
    """What a stream that answered 200 sent: its frames, and its text (for `retry:`)."""

    frames: list[Frame]
    text: str


def read_stream(client: TestClient, method: str, path: str, **kwargs: Any) -> Stream:
    """A whole stream (one cut short raises here)."""
    with client.stream(method, path, **kwargs) as response:
        assert response.status_code == 200, response.read()
        text = response.read().decode().replace("\r\n", "\n")
    return Stream(list(iter_sse(iter(text.splitlines()))), text)


def stream_of_each_kind(client: TestClient) -> dict[str, Stream]:
    """/run_sse, a mode=stream invocation and GET .../events of a finished invocation."""
    finished = client.post(f"{SESSIONS}/events/invocations", json={"newMessage": QUESTION})
    assert finished.status_code == 200, finished.text
    iid = finished.json()["invocation"]["id"]
    stream = {"newMessage": QUESTION, "mode": "stream"}
    return {
        "run_sse": read_stream(client, "POST", "/run_sse", json=RUN),
        "stream": read_stream(client, "POST", f"{SESSIONS}/stream/invocations", json=stream),
        "events": read_stream(client, "GET", f"{SESSIONS}/events/invocations/{iid}/events"),
    }


def problem_of(kind: str, frame: Frame) -> dict[str, Any]:
    """The problem an error frame carries (ADK's `{"error", "type"}` on /run_sse)."""
    assert frame.event == "error", frame
    body: dict[str, Any] = json.loads(frame.data)
    if kind == "run_sse":
        assert set(body) == {"error", "type"}, body
    return body


def test_an_unavailable_database_mid_stream_ends_each_stream_with_its_problem_and_retry(
    client: TestClient,
) -> None:
    fail_follow_after_the_call(client, DatabaseUnavailable())
    for kind, stream in stream_of_each_kind(client).items():
        *before, last = stream.frames
        assert [f.event for f in before] == ["event"] * EVENTS_BEFORE[kind], (kind, stream.text)
        assert all((f.id or "").isdigit() for f in before), (kind, stream.text)
        assert problem_of(kind, last)["type"] == "database-unavailable", kind
        # The Retry-After of the 503, as the delay an EventSource waits before reconnecting.
        assert "retry: 1000" in stream.text.strip().split("\n\n")[-1], (kind, stream.text)


def test_an_unexpected_error_mid_stream_is_logged_once_and_sent_as_internal_error(
    client: TestClient, caplog: pytest.LogCaptureFixture
) -> None:
    fail_follow_after_the_call(client, RuntimeError("secret internals"))
    with caplog.at_level(logging.ERROR):
        streams = stream_of_each_kind(client)
    for kind, stream in streams.items():
        *before, last = stream.frames
        assert [f.event for f in before] == ["event"] * EVENTS_BEFORE[kind], (kind, stream.text)
        problem = problem_of(kind, last)
        assert problem["type"] == "internal-error", kind
        assert "secret internals" not in last.data
    logged = [r for r in caplog.records if r.exc_info and "secret internals" in str(r.exc_info[1])]
    assert len(logged) == len(streams)  # once per stream


def test_run_sse_names_its_invocation_in_a_header_and_in_every_event(client: TestClient) -> None:
    with client.stream("POST", "/run_sse", json=RUN) as response:
        assert response.status_code == 200
        iid = response.headers["x-invocation-id"]
        frames = list(iter_sse(response.iter_lines()))
    events = [json.loads(f.data) for f in frames]
    assert events
    assert all(e["invocationId"] == iid for e in events)
    assert all((f.id or "").isdigit() for f in frames if f.event == "event")
