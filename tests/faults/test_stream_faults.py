"""Streams while PostgreSQL stops, on an API-only replica (issue 26, acceptance 3).

An `agentd serve` replica with AGENTD_RUN_INVOCATIONS=false queues invocations for an `agentd
worker` process and serves their streams by reading the event log. The `gated_agent` test app
holds each run in its tool until the test creates the session's gate file, so every stream is
open mid-run when the test stops PostgreSQL (`pg_ctl stop -m fast`, a cluster of this module's
own). Every stream must then end with an error frame carrying the problem (or `done`), as a
complete HTTP response, and the server must log no ASGI exception. Once PostgreSQL is back and
the gates open, a reconnect to `GET .../invocations/{iid}/events` with the last `id:` the client
read as `Last-Event-ID` gets exactly the persisted events after it, then `done`.

The worker may itself fail the run while the database is away (its heartbeat cannot renew the
lease), so the final status is not asserted: only that the stream ends with `done` and that the
client reads each persisted event of the invocation once, across the two streams.
"""

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.live_server import Frame, LiveServer, WorkerProcess, gated_app_env, iter_sse, wait_until
from tests.pgserver import PostgresServer

SESSIONS = "/apps/gated_agent/users/u1/sessions"
MESSAGE = {"role": "user", "parts": [{"text": "go"}]}
#: Far above anything the server should take: a stream still open by then is a hang.
CLIENT_TIMEOUT = 60.0
#: Streams of each kind.
PER_KIND = 2
#: The seq of the model's call to wait_for_gate: a stream that read it follows a run held
#: mid-flight (seq 1 is the user's message, which /run_sse does not send).
CALL_SEQ = 2
ASGI_EXCEPTION = "Exception in ASGI application"

OpenStream = Callable[[httpx.Client], AbstractContextManager[httpx.Response]]


@dataclass
class Reader:
    """One client reading one stream to its end on a thread of its own."""

    kind: str
    session_id: str
    open_stream: OpenStream
    base_url: str
    frames: list[Frame] = field(default_factory=list)
    header_invocation_id: str | None = None
    #: Set when the HTTP response completed; `failure` when it did not (a cut stream).
    completed: bool = False
    failure: str | None = None
    thread: threading.Thread | None = None

    def start(self) -> "Reader":
        """Open the stream and read it in the background."""
        self.thread = threading.Thread(target=self._read, name=self.session_id, daemon=True)
        self.thread.start()
        return self

    def _read(self) -> None:
        try:
            with (
                httpx.Client(base_url=self.base_url, timeout=CLIENT_TIMEOUT) as http,
                self.open_stream(http) as response,
            ):
                if response.status_code != 200:
                    self.failure = f"{response.status_code}: {response.read()!r}"
                    return
                self.header_invocation_id = response.headers.get("x-invocation-id")
                for frame in iter_sse(response.iter_lines()):
                    self.frames.append(frame)
            self.completed = True
        except httpx.HTTPError as exc:
            self.failure = f"{type(exc).__name__}: {exc}"

    @property
    def done(self) -> bool:
        """Whether the reading thread has ended."""
        return self.thread is not None and not self.thread.is_alive()

    def saw(self, seq: int) -> bool:
        """Whether the stream delivered the event of that seq."""
        return str(seq) in {f.id for f in self.frames}

    @property
    def last_seq(self) -> int:
        """The last `id:` the client read (what it sends as Last-Event-ID)."""
        return max(int(f.id) for f in self.frames if f.id)

    @property
    def invocation_id(self) -> str:
        """The invocation the stream followed, as its events name it."""
        ids = {
            json.loads(f.data)["invocationId"]
            for f in self.frames
            if f.event in ("event", "partial")
        }
        assert len(ids) == 1, (self.kind, ids)
        return str(ids.pop())

    def __str__(self) -> str:
        seen = [(f.event, f.id) for f in self.frames]
        return f"{self.kind} {self.session_id}: completed={self.completed} {self.failure} {seen}"


# -- fixtures ---------------------------------------------------------------------------------


@pytest.fixture
def processes() -> Iterator[list[LiveServer]]:
    """Processes a test started, stopped at its end whatever happened."""
    started: list[LiveServer] = []
    yield started
    for process in started:
        process.stop()


# -- the three kinds of stream ----------------------------------------------------------------


def run_sse(session_id: str) -> OpenStream:
    """ADK's POST /run_sse for the session."""
    body = {
        "appName": "gated_agent",
        "userId": "u1",
        "sessionId": session_id,
        "newMessage": MESSAGE,
    }
    return lambda http: http.stream("POST", "/run_sse", json=body)


def stream_mode(session_id: str) -> OpenStream:
    """POST .../invocations with mode=stream."""
    body = {"newMessage": MESSAGE, "mode": "stream"}
    return lambda http: http.stream("POST", f"{SESSIONS}/{session_id}/invocations", json=body)


def events_of(session_id: str, invocation_id: str, last_seq: int = 0) -> OpenStream:
    """GET .../invocations/{iid}/events, after `last_seq` (as Last-Event-ID) if given."""
    path = f"{SESSIONS}/{session_id}/invocations/{invocation_id}/events"
    headers = {"Last-Event-ID": str(last_seq)} if last_seq else {}
    return lambda http: http.stream("GET", path, headers=headers)


def persisted(http: httpx.Client, session_id: str, invocation_id: str) -> list[dict[str, Any]]:
    """The stored events of the invocation, in seq order."""
    response = http.get(f"{SESSIONS}/{session_id}/events", params={"pageSize": 1000})
    assert response.status_code == 200, response.text
    page = response.json()
    assert not page.get("nextPageToken")
    return [e for e in page["events"] if e["invocationId"] == invocation_id]


def problem_of(reader: Reader, frame: Frame) -> dict[str, Any]:
    """The problem of a stream's error frame: ADK's `{"error", "type"}` on /run_sse, the
    problem JSON on our invocation streams."""
    body: dict[str, Any] = json.loads(frame.data)
    expected = {"error", "type"} if reader.kind == "run_sse" else {"type", "title", "status"}
    assert expected <= body.keys(), (str(reader), body)
    return body


def wait_for(predicate: Callable[[], bool], explain: Callable[[], str], timeout: float) -> None:
    """wait_until, failing with `explain()` rather than a bare TimeoutError."""
    try:
        wait_until(predicate, timeout=timeout, interval=0.05)
    except TimeoutError:
        pytest.fail(explain())


# -- acceptance 3 ------------------------------------------------------------------------------


def test_streams_on_an_api_replica_end_with_an_error_frame_when_postgres_stops_and_resume_after(
    tmp_path: Path, cluster: PostgresServer, processes: list[LiveServer]
) -> None:
    gates = tmp_path / "gates"
    settings = {
        **gated_app_env(tmp_path, gates, cluster.create_database("streams")),
        "AGENTD_LEASE_SECONDS": "4",
        "AGENTD_LOG_FORMAT": "text",
    }
    api = LiveServer(tmp_path / "api", {**settings, "AGENTD_RUN_INVOCATIONS": "false"})
    processes.append(api)
    api.start()
    worker = WorkerProcess(tmp_path / "worker", settings)
    processes.append(worker)
    worker.start()

    http = httpx.Client(base_url=api.url, timeout=CLIENT_TIMEOUT)
    readers: list[Reader] = []
    for n in range(PER_KIND):
        for kind in ("run_sse", "stream", "events"):
            session_id = f"{kind}-{n}"
            created = http.post(SESSIONS, json={"sessionId": session_id})
            assert created.status_code == 201, created.text
            if kind == "run_sse":
                open_stream = run_sse(session_id)
            elif kind == "stream":
                open_stream = stream_mode(session_id)
            else:
                queued = http.post(
                    f"{SESSIONS}/{session_id}/invocations",
                    json={"newMessage": MESSAGE, "mode": "background"},
                )
                assert queued.status_code == 202, queued.text
                open_stream = events_of(session_id, queued.json()["id"])
            readers.append(Reader(kind, session_id, open_stream, api.url).start())
    # Every run is held in its tool on the worker, and every stream has delivered the call.
    wait_for(
        lambda: all(r.saw(CALL_SEQ) for r in readers),
        lambda: "streams did not reach the tool:\n" + "\n".join(map(str, readers)),
        timeout=CLIENT_TIMEOUT,
    )

    cluster.stop_fast()
    try:
        wait_for(
            lambda: all(r.done for r in readers),
            lambda: "streams still open without the database:\n" + "\n".join(map(str, readers)),
            timeout=CLIENT_TIMEOUT,
        )
    finally:
        cluster.start()

    # Each stream ended as a whole HTTP response, its last frame an error with the problem.
    cut = [str(r) for r in readers if not r.completed]
    assert cut == [], "streams cut short:\n" + "\n".join(cut)
    for reader in readers:
        last = reader.frames[-1]
        assert last.event in ("error", "done"), str(reader)
        if last.event == "error":
            assert problem_of(reader, last)["type"] == "database-unavailable", str(reader)
        if reader.kind == "run_sse":
            # ADK's wire: each data line an ADK event or ADK's error object; the invocation is
            # named by every event and by the response header.
            assert reader.invocation_id == reader.header_invocation_id, str(reader)
            for frame in reader.frames[:-1]:
                assert "seq" not in json.loads(frame.data), str(reader)
    log = api.log.read_text(errors="replace")
    assert ASGI_EXCEPTION not in log, log[-4000:]

    # With the database back and the gates open, a reconnect with Last-Event-ID completes each.
    for reader in readers:
        (gates / f"{reader.session_id}.open").touch()
    resumed = [
        Reader(
            r.kind,
            r.session_id,
            events_of(r.session_id, r.invocation_id, r.last_seq),
            api.url,
        ).start()
        for r in readers
    ]
    wait_for(
        lambda: all(r.done for r in resumed),
        lambda: "reconnected streams did not end:\n" + "\n".join(map(str, resumed)),
        timeout=2 * CLIENT_TIMEOUT,
    )
    for first, rest in zip(readers, resumed, strict=True):
        assert rest.completed, str(rest)
        assert rest.frames, str(rest)
        assert rest.frames[-1].event == "done", str(rest)
        stored = [e["seq"] for e in persisted(http, first.session_id, first.invocation_id)]
        before = [int(f.id) for f in first.frames if f.id]
        after = [int(f.id) for f in rest.frames if f.id]
        # Every persisted event of the invocation reached the client once, in order, across
        # the two streams (/run_sse leaves out the user's message, as ADK does).
        shown = [s for s in stored if first.kind != "run_sse" or s != stored[0]]
        assert before == [s for s in shown if s <= first.last_seq], str(first)
        assert after == [s for s in stored if s > first.last_seq], (str(rest), stored)
    log = api.log.read_text(errors="replace")
    assert ASGI_EXCEPTION not in log, log[-4000:]
    http.close()
