"""Database faults against real processes: PostgreSQL stopped and started again under load on two
replicas, and an SQLite file made unwritable and writable again (issue 14, items 6a, 6b and 6f).

Each test runs `agentd serve --migrate` as child processes (tests/live_server.py) and drives them
over HTTP with generous client timeouts, recording every answer. It asserts that every request got
an HTTP answer, that a database that cannot serve is a 503 `database-unavailable` problem with
Retry-After and without the driver's text (or, for a run whose message was committed before the
database went away, 500 `outcome-unknown` naming the stored invocation: issue 26), that the servers
recover once the database is back without a restart (and still stop on SIGTERM), and that the data
agree afterwards: per session, seqs 1..N without a gap, state equal to the replay of the stored
state deltas, only the PATCHes answered 200 committed, and every artifact version row naming a blob
the store holds.

PostgreSQL is a cluster of this module's own (the tests stop it with `pg_ctl stop -m fast`, which
ends every session, and start it again on the same port and data dir). The `gated_agent` test app
holds a run in flight until the test creates its gate file, so a run is surely mid-flight when the
database goes away; `capital_agent` runs (which save a `notes.txt` artifact) and PATCHes are sent
in loops from both replicas, so others are caught at whatever step they reach.

SQLite is made unwritable with `chattr +i` on the database file and its WAL (the suite runs as
root, whom file modes do not stop). The `-shm` file is left alone: SQLite maps it into memory, and
a store to a mapped page of an immutable file is a SIGBUS that kills the process (the kernel's
answer, which no server can turn into a 503); it holds only the WAL index, no data.
"""

import hashlib
import json
import sqlite3
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.live_server import LiveServer, build_agents_dir, iter_sse, wait_until
from tests.pgserver import PostgresServer
from tests.problems import PROBLEM, assert_problem

GATED = "/apps/gated_agent/users/u1/sessions"
CAPITAL = "/apps/capital_agent/users/u1/sessions"
MESSAGE = {"role": "user", "parts": [{"text": "go"}]}
COUNTRIES = ["France", "Germany", "Italy", "Japan", "Spain", "Canada"]
#: Far above anything the server should take: a request still unanswered by then is a hang.
CLIENT_TIMEOUT = 30.0
#: LiveServer.stop's grace period before it kills.
STOP_SECONDS = 30
TERMINAL = {"completed", "failed", "cancelled"}
SCOPED_PREFIXES = ("app:", "user:", "temp:")
#: What a client must never read in a problem about the database (lower-cased).
DRIVER_TEXT = (
    "asyncpg",
    "sqlalchemy",
    "psycopg",
    "sqlstate",
    "connection",
    "127.0.0.1",
    "errno",
    "select ",
    "insert ",
    "update ",
    "sqlite",
    "agentd.db",
    "readonly",
    "disk i/o",
    "operationalerror",
)


# -- answers ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Answer:
    """What one request got: its HTTP answer, or (status None) the error that replaced it."""

    request: str
    status: int | None
    problem_type: str | None = None
    retry_after: str | None = None
    body: str = ""
    #: The state key a PATCH wrote, with its value.
    key: str | None = None
    value: int | None = None

    @classmethod
    def of(
        cls,
        request: str,
        call: Callable[[], httpx.Response],
        *,
        key: str | None = None,
        value: int | None = None,
    ) -> "Answer":
        """Send the request and record what came back."""
        try:
            response = call()
        except httpx.HTTPError as exc:
            return cls(request, None, body=f"{type(exc).__name__}: {exc}", key=key, value=value)
        problem_type = None
        if response.headers.get("content-type", "").startswith(PROBLEM):
            problem_type = response.json().get("type")
        return cls(
            request,
            response.status_code,
            problem_type,
            response.headers.get("retry-after"),
            response.text,
            key,
            value,
        )

    @property
    def ok(self) -> bool:
        """A 2xx answer."""
        return self.status is not None and 200 <= self.status < 300

    def __str__(self) -> str:
        return f"{self.request} -> {self.status} retry-after={self.retry_after} {self.body[:300]}"


def leaked_text(body: str, *extra: str) -> list[str]:
    """The driver's words, hosts or paths found in a response body."""
    lowered = body.lower()
    return [text for text in (*DRIVER_TEXT, *extra) if text.lower() in lowered]


def is_database_unavailable(answer: Answer, *hidden: str) -> bool:
    """503 database-unavailable with a positive Retry-After, naming none of the driver's text."""
    return (
        answer.status == 503
        and answer.problem_type == "database-unavailable"
        and answer.retry_after is not None
        and answer.retry_after.isdigit()
        and int(answer.retry_after) > 0
        and not leaked_text(answer.body, *hidden)
    )


def is_outcome_unknown(answer: Answer, *hidden: str) -> bool:
    """500 outcome-unknown naming the invocation, for a run whose message was committed and
    whose end the replica could not record (issue 26: never a 503, which says nothing was)."""
    if answer.status != 500 or answer.problem_type != "outcome-unknown":
        return False
    return bool(json.loads(answer.body).get("invocationId")) and not leaked_text(
        answer.body, *hidden
    )


def is_unconfirmed_patch(answer: Answer, *hidden: str) -> bool:
    """500 outcome-unknown for a PATCH whose COMMIT the database did not confirm (it stopped
    while the commit was in flight): the PATCH may or may not have taken effect, and saying so is
    the only true answer (a 503 would claim nothing was committed)."""
    return (
        answer.key is not None
        and answer.status == 500
        and answer.problem_type == "outcome-unknown"
        and not leaked_text(answer.body, *hidden)
    )


def assert_database_unavailable(response: httpx.Response, *hidden: str) -> None:
    """The response is 503 database-unavailable with Retry-After and no driver text."""
    assert_problem(response, 503, "database-unavailable")
    assert int(response.headers["retry-after"]) > 0, response.headers
    assert leaked_text(response.text, *hidden) == [], response.text
    assert response.headers.get("connection", "").lower() != "close"


def describe(answers: Sequence[Answer], limit: int = 20) -> str:
    """The first answers of a list, one a line."""
    lines = [str(a) for a in answers[:limit]]
    if len(answers) > limit:
        lines.append(f"... and {len(answers) - limit} more")
    return "\n".join(lines)


def tally(answers: Sequence[Answer]) -> str:
    """How many answers of each method, status and problem type."""
    counts = Counter(
        f"{a.request.split()[0]} {a.status} {a.problem_type or ''}".strip() for a in answers
    )
    return ", ".join(f"{key}: {n}" for key, n in sorted(counts.items()))


def poll(predicate: Callable[[], bool], explain: Callable[[], str], timeout: float = 60) -> None:
    """wait_until, failing with `explain()` rather than a bare TimeoutError."""
    try:
        wait_until(predicate, timeout=timeout, interval=0.1)
    except TimeoutError:
        pytest.fail(explain())


class Load(threading.Thread):
    """Sends one kind of request in a loop on its own client until halted, keeping every answer."""

    def __init__(self, name: str, base_url: str, send: Callable[[httpx.Client, int], Answer]):
        super().__init__(name=name, daemon=True)
        self.base_url = base_url
        self.send = send
        self.answers: list[Answer] = []
        self.halt = threading.Event()

    def run(self) -> None:
        """Send until halted."""
        with httpx.Client(base_url=self.base_url, timeout=CLIENT_TIMEOUT) as http:
            n = 0
            while not self.halt.is_set():
                answer = self.send(http, n)
                self.answers.append(answer)
                n += 1
                if not answer.ok:
                    time.sleep(0.05)  # pacing only: refused requests come back at once

    def ok_since(self, mark: int) -> int:
        """Answers in 2xx after the first `mark` answers."""
        return sum(a.ok for a in self.answers[mark:])


# -- requests ---------------------------------------------------------------------------------


def run_body(app: str, session_id: str, text: str) -> dict[str, Any]:
    """An ADK /run request."""
    return {
        "appName": app,
        "userId": "u1",
        "sessionId": session_id,
        "newMessage": {"role": "user", "parts": [{"text": text}]},
    }


def capital_run(http: httpx.Client, n: int, session_id: str = "c") -> Answer:
    """A capital_agent /run (it saves a notes.txt artifact); session `c` unless told."""
    body = run_body("capital_agent", session_id, f"What is the capital of {COUNTRIES[n % 6]}?")
    label = f"POST {str(http.base_url).rstrip('/')}/run ({session_id} #{n})"
    return Answer.of(label, lambda: http.post("/run", json=body))


def patcher(prefix: str) -> Callable[[httpx.Client, int], Answer]:
    """Blind PATCHes of session `p`, each writing a key of its own."""

    def send(http: httpx.Client, n: int) -> Answer:
        key = f"{prefix}{n}"
        return Answer.of(
            f"PATCH {str(http.base_url).rstrip('/')}{CAPITAL}/p {{{key}: {n}}}",
            lambda: http.patch(f"{CAPITAL}/p", json={"stateDelta": {key: n}}),
            key=key,
            value=n,
        )

    return send


def gated_run(base_url: str, session_id: str, *, wait_mode: bool) -> Answer:
    """A gated_agent run, by /run or by POST invocations (mode wait); answered once it ends."""
    with httpx.Client(base_url=base_url, timeout=CLIENT_TIMEOUT) as http:
        if wait_mode:
            body = {"newMessage": MESSAGE, "mode": "wait"}
            path = f"{GATED}/{session_id}/invocations"
            return Answer.of(f"POST {base_url}{path}", lambda: http.post(path, json=body))
        run = run_body("gated_agent", session_id, "go")
        return Answer.of(f"POST {base_url}/run ({session_id})", lambda: http.post("/run", json=run))


def upload(http: httpx.Client, data: bytes) -> httpx.Response:
    """PUT a new version of artifact doc.bin of session s."""
    return http.put(
        f"{CAPITAL}/s/artifacts/doc.bin/content",
        content=data,
        headers={"content-type": "application/octet-stream"},
    )


def create(http: httpx.Client, sessions: str, session_id: str) -> None:
    """Create a session, which must succeed."""
    response = http.post(sessions, json={"sessionId": session_id})
    assert response.status_code == 201, response.text


def local_port(response: httpx.Response) -> int:
    """The client-side port of the connection that carried the response."""
    port: int = response.extensions["network_stream"].get_extra_info("client_addr")[1]
    return port


# -- checks -----------------------------------------------------------------------------------


def all_events(http: httpx.Client, sessions: str, session_id: str) -> list[dict[str, Any]]:
    """Every stored event of the session, in seq order (all pages)."""
    events: list[dict[str, Any]] = []
    token: str | None = None
    while True:
        params: dict[str, str | int] = {"pageSize": 1000}
        if token:
            params["pageToken"] = token
        response = http.get(f"{sessions}/{session_id}/events", params=params)
        assert response.status_code == 200, response.text
        page = response.json()
        events += page["events"]
        token = page.get("nextPageToken")
        if not token:
            return events


def session_scoped(state: dict[str, Any]) -> dict[str, Any]:
    """The keys of a state that belong to the session itself."""
    return {k: v for k, v in state.items() if not k.startswith(SCOPED_PREFIXES)}


def assert_consistent(http: httpx.Client, sessions: str, session_id: str) -> dict[str, Any]:
    """Seqs 1..N without a gap, and state equal to the replay of the stored deltas; the state."""
    events = all_events(http, sessions, session_id)
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1)), session_id
    replayed: dict[str, Any] = {}
    for event in events:
        replayed.update(session_scoped((event.get("actions") or {}).get("stateDelta") or {}))
    response = http.get(f"{sessions}/{session_id}")
    assert response.status_code == 200, response.text
    state = session_scoped(response.json()["state"])
    assert state == replayed, session_id
    return state


def assert_calls_answered(http: httpx.Client, sessions: str, session_id: str) -> None:
    """Every function call stored in the session has a function response (issue 14, item 4)."""
    calls: set[str] = set()
    answered: set[str] = set()
    for event in all_events(http, sessions, session_id):
        for part in (event.get("content") or {}).get("parts") or []:
            if "functionCall" in part:
                calls.add(part["functionCall"]["id"])
            if "functionResponse" in part:
                answered.add(part["functionResponse"]["id"])
    assert calls <= answered, f"{session_id}: calls without a response: {calls - answered}"


def patch_mismatches(state: dict[str, Any], answers: list[Answer]) -> list[str]:
    """PATCHes answered 200 whose key is not in the state, and PATCHes answered otherwise
    whose key is (committed although the client was told they failed)."""
    patches = [a for a in answers if a.key is not None]
    lost = [a for a in patches if a.ok and state.get(a.key or "") != a.value]
    committed = [
        a for a in patches if not a.ok and a.key in state and a.problem_type != "outcome-unknown"
    ]
    found = []
    if lost:
        found.append(f"PATCHes answered 200 but not in the state:\n{describe(lost)}")
    if committed:
        found.append(f"PATCHes answered non-2xx but committed:\n{describe(committed)}")
    return found


def assert_blobs_agree(rows: list[tuple[str, str]], blobs: Path) -> None:
    """Every (blob key, sha256) of an artifact version row is a blob with those bytes."""
    for key, sha256 in rows:
        blob = blobs / key
        assert blob.is_file(), f"version row names blob {key}, which the store lacks"
        assert hashlib.sha256(blob.read_bytes()).hexdigest() == sha256, key


def pg_version_rows(cluster: PostgresServer, database: str) -> list[tuple[str, str]]:
    """(blob key, sha256) of every artifact version row, read straight from PostgreSQL."""
    out = cluster.psql("SELECT blob_key, sha256 FROM artifact_versions", database=database)
    return [(k, s) for k, _, s in (line.partition("|") for line in out.splitlines() if line)]


def sqlite_version_rows(db_file: Path) -> list[tuple[str, str]]:
    """(blob key, sha256) of every artifact version row, read straight from the SQLite file."""
    with sqlite3.connect(db_file) as db:
        rows = db.execute("SELECT blob_key, sha256 FROM artifact_versions").fetchall()
    return [(str(k), str(s)) for k, s in rows]


def log_tail(server: LiveServer, lines: int = 60) -> str:
    """The end of the server's log."""
    return "\n".join(server.log.read_text(errors="replace").splitlines()[-lines:])


def stop_gracefully(server: LiveServer) -> None:
    """SIGTERM, which must end the process within LiveServer.stop's grace period."""
    assert server.process is not None
    server.process.terminate()
    try:
        server.process.wait(timeout=STOP_SECONDS)
    except subprocess.TimeoutExpired:
        server.kill()
        pytest.fail(f"SIGTERM did not stop {server.url} in {STOP_SECONDS} s:\n{log_tail(server)}")


# -- fixtures ---------------------------------------------------------------------------------


@contextmanager
def stopped(cluster: PostgresServer) -> Iterator[None]:
    """PostgreSQL stopped (`pg_ctl stop -m fast`) inside the block, started again after it."""
    cluster.stop_fast()
    try:
        yield
    finally:
        cluster.start()


@pytest.fixture
def servers() -> Iterator[list[LiveServer]]:
    """Servers a test started, stopped at its end whatever happened."""
    started: list[LiveServer] = []
    yield started
    for server in started:
        server.stop()


def start(servers: list[LiveServer], workdir: Path, settings: dict[str, str]) -> LiveServer:
    """Start a server (registered for cleanup first, so a failed start is stopped too)."""
    server = LiveServer(workdir, settings)
    servers.append(server)
    return server.start()


def server_settings(root: Path, **extra: str) -> dict[str, str]:
    """Settings shared by the servers of one test: data dir (blobs included), agents, gates."""
    gates = root / "gates"
    gates.mkdir(parents=True, exist_ok=True)
    return {
        "AGENTD_DATA_DIR": str(root / "data"),
        "AGENTD_AGENTS_DIR": str(build_agents_dir(root / "agents")),
        "AGENTD_TEST_GATES": str(gates),
        "AGENTD_ENQUEUE_TIMEOUT_SECONDS": "60",
        **extra,
    }


# -- 6a: PostgreSQL stopped while runs and PATCHes are in flight on two replicas -------------


def test_postgres_stopped_mid_flight_answers_every_request_and_recovers_without_restart(
    tmp_path: Path, cluster: PostgresServer, servers: list[LiveServer]
) -> None:
    url = cluster.create_database("faults_6a")
    # A lease longer than the outage: a run whose tool waits across it keeps its session, so it
    # is the run's own ending (not a reaper) that is tested.
    settings = server_settings(tmp_path, AGENTD_DATABASE_URL=url, AGENTD_LEASE_SECONDS="8")
    gates = Path(settings["AGENTD_TEST_GATES"])
    replicas = [start(servers, tmp_path / "a", settings), start(servers, tmp_path / "b", settings)]
    a, b = (httpx.Client(base_url=r.url, timeout=CLIENT_TIMEOUT) for r in replicas)

    gated = [f"g{i}" for i in range(6)]  # g0-g3: gate opens during the outage; g4, g5: after
    for session_id in gated:
        create(a, GATED, session_id)
    create(a, CAPITAL, "p")
    create(a, CAPITAL, "c")

    pool = ThreadPoolExecutor(max_workers=len(gated))
    runs: dict[str, Future[Answer]] = {}
    owners: dict[str, str] = {}  # session -> the replica running its gated run
    for i, session_id in enumerate(gated):
        owner = replicas[i % 2].url
        owners[session_id] = owner
        runs[session_id] = pool.submit(gated_run, owner, session_id, wait_mode=i % 4 >= 2)
    # Each gated run is in flight: its tool waits (the user's message and the model's call are
    # stored), and its invocation is listed.
    poll(
        lambda: all(len(all_events(a, GATED, s)) >= 2 for s in gated),
        lambda: f"gated runs did not start:\n{log_tail(replicas[0])}\n{log_tail(replicas[1])}",
    )
    invocation_ids = {
        s: a.get(f"{GATED}/{s}/invocations").json()["invocations"][0]["id"] for s in gated
    }

    loads = [
        Load("patch-a", replicas[0].url, patcher("a")),
        Load("patch-b", replicas[1].url, patcher("b")),
        Load("run-a", replicas[0].url, capital_run),
        Load("run-b", replicas[1].url, capital_run),
    ]
    for load in loads:
        load.start()
    try:
        poll(
            lambda: all(load.ok_since(0) >= 3 for load in loads),
            lambda: "\n".join(f"{x.name}:\n{describe(x.answers)}" for x in loads),
        )
        marks = [len(load.answers) for load in loads]
        with stopped(cluster):
            for session_id in gated[:4]:
                (gates / f"{session_id}.open").touch()
            # Keep sending for a moment: every loop gets answers while the database is down.
            poll(
                lambda: all(len(x.answers) >= m + 5 for x, m in zip(loads, marks, strict=True)),
                lambda: "\n".join(f"{x.name}:\n{describe(x.answers[-5:])}" for x in loads),
            )
            # The runs whose tool returned during the outage may answer now (not required: they
            # must answer, below, but may do so once the database is back).
            wait([runs[s] for s in gated[:4]], timeout=5)
        for session_id in gated[4:]:
            (gates / f"{session_id}.open").touch()
        # New runs and PATCHes succeed on both replicas, which were not restarted.
        marks = [len(load.answers) for load in loads]
        poll(
            lambda: all(x.ok_since(m) >= 3 for x, m in zip(loads, marks, strict=True)),
            lambda: (
                "\n".join(f"{x.name}:\n{describe(x.answers[-5:])}" for x in loads)
                + f"\n{log_tail(replicas[0])}\n{log_tail(replicas[1])}"
            ),
        )
    finally:
        for load in loads:
            load.halt.set()
        for load in loads:
            load.join(timeout=2 * CLIENT_TIMEOUT)
    assert [x.name for x in loads if x.is_alive()] == [], "a request outlived its client timeout"
    gated_answers = {s: runs[s].result(timeout=2 * CLIENT_TIMEOUT) for s in gated}
    pool.shutdown()
    answers = [*gated_answers.values(), *(x for load in loads for x in load.answers)]

    # Every request got an HTTP answer.
    unanswered = [x for x in answers if x.status is None]
    assert unanswered == [], f"requests without an answer:\n{describe(unanswered)}"

    # Every invocation reaches a final status once the database is back.
    def live_invocations() -> list[str]:
        found = []
        for sessions, session_id in [*((GATED, s) for s in gated), (CAPITAL, "c")]:
            listed = a.get(f"{sessions}/{session_id}/invocations", params={"pageSize": 1000})
            assert listed.status_code == 200, listed.text
            found += [
                f"{session_id}/{i['id']}: {i['status']}"
                for i in listed.json()["invocations"]
                if i["status"] not in TERMINAL
            ]
        return found

    poll(lambda: not live_invocations(), lambda: f"not final: {live_invocations()}")

    # The owning replica answers a follower of each gated invocation, up to `done`.
    for session_id in gated:
        done = follow_to_done(owners[session_id], session_id, invocation_ids[session_id])
        assert done["status"] in TERMINAL, (session_id, done)

    # One more PATCH and one more run on each replica, answered at once.
    for http, name in ((a, "a"), (b, "b")):
        assert http.patch(f"{CAPITAL}/p", json={"stateDelta": {f"{name}-after": 1}}).is_success
        answer = capital_run(http, 0)
        assert answer.ok, answer

    # The data agree: no seq gap, state = replay, every call answered, blobs stored.
    for session_id in gated:
        assert_consistent(a, GATED, session_id)
        assert_calls_answered(a, GATED, session_id)
    assert_consistent(a, CAPITAL, "c")
    assert_calls_answered(a, CAPITAL, "c")
    patched = assert_consistent(b, CAPITAL, "p")
    assert_blobs_agree(pg_version_rows(cluster, "faults_6a"), tmp_path / "data" / "blobs")
    stored_invocations = [
        i["id"]
        for sessions, session_id in [*((GATED, s) for s in gated), (CAPITAL, "c")]
        for i in a.get(f"{sessions}/{session_id}/invocations", params={"pageSize": 1000}).json()[
            "invocations"
        ]
    ]
    a.close()
    b.close()

    for replica in replicas:
        stop_gracefully(replica)

    # What each client was told: only the PATCHes answered 200 were committed; every answer is
    # 2xx, a 503 database-unavailable (nothing committed), or, for a run whose message was
    # committed before the database went away, 500 outcome-unknown naming an invocation that
    # exists. Checked together, last, so that one failure does not hide the others.
    hidden = f":{cluster.port}"
    wrong = [
        x
        for x in answers
        if not (
            x.ok
            or is_database_unavailable(x, hidden)
            or is_outcome_unknown(x, hidden)
            or is_unconfirmed_patch(x, hidden)
        )
    ]
    failures = patch_mismatches(patched, answers)
    if wrong:
        failures.append(f"answers other than 2xx, 503 or outcome-unknown:\n{describe(wrong)}")
    stored = set(stored_invocations)
    for unknown in (x for x in answers if is_outcome_unknown(x)):
        if json.loads(unknown.body)["invocationId"] not in stored:
            failures.append(f"outcome-unknown for an invocation that was not stored: {unknown}")
    assert failures == [], "\n\n".join([*failures, f"all answers: {tally(answers)}"])


def follow_to_done(base_url: str, session_id: str, invocation_id: str) -> dict[str, Any]:
    """Follow an invocation's events on `base_url` to its `done` frame (its data)."""
    deadline = time.monotonic() + CLIENT_TIMEOUT
    path = f"{GATED}/{session_id}/invocations/{invocation_id}/events"
    with (
        httpx.Client(base_url=base_url, timeout=CLIENT_TIMEOUT) as http,
        http.stream("GET", path) as response,
    ):
        assert response.status_code == 200, response.read()
        for frame in iter_sse(response.iter_lines()):
            if frame.event == "done":
                done: dict[str, Any] = json.loads(frame.data)
                return done
            assert time.monotonic() < deadline, f"{path} on {base_url}: no done frame"
    pytest.fail(f"{path} on {base_url} ended without a done frame")


# -- 6b: what each route answers while PostgreSQL is down -------------------------------------


def test_postgres_stopped_answers_503_database_unavailable_on_one_connection_and_commits_nothing(
    tmp_path: Path, cluster: PostgresServer, servers: list[LiveServer]
) -> None:
    url = cluster.create_database("faults_6b")
    server = start(servers, tmp_path / "a", server_settings(tmp_path, AGENTD_DATABASE_URL=url))
    port_text = f":{cluster.port}"
    with httpx.Client(base_url=server.url, timeout=CLIENT_TIMEOUT) as http:
        create(http, CAPITAL, "s")
        assert http.patch(f"{CAPITAL}/s", json={"stateDelta": {"before": 1}}).status_code == 200
        assert upload(http, b"before").status_code == 201
        assert capital_run(http, 0, "s").ok
        etag = http.get(f"{CAPITAL}/s").headers["etag"]

        with stopped(cluster):
            refused = [
                http.get(f"{CAPITAL}/s"),
                http.get(f"{CAPITAL}/s/events"),
                http.post(CAPITAL, json={"sessionId": "new"}),
                http.patch(f"{CAPITAL}/s", json={"stateDelta": {"during": 1}}),
                http.patch(
                    f"{CAPITAL}/s",
                    json={"stateDelta": {"during_if_match": 1}},
                    headers={"If-Match": etag},
                ),
                http.post("/run", json=run_body("capital_agent", "s", "capital of Japan?")),
                http.post(f"{CAPITAL}/s/invocations", json={"newMessage": MESSAGE, "mode": "wait"}),
                upload(http, b"during"),
            ]
            for response in refused:
                assert_database_unavailable(response, port_text)
            # The keep-alive connection stays usable: the next request on the same client is
            # answered, on the same connection.
            health = http.get("/health")
            assert health.status_code == 200
            assert {local_port(r) for r in [*refused, health]} == {local_port(health)}

        # Without a restart: reads, then writes, succeed again.
        poll(
            lambda: http.get(f"{CAPITAL}/s").status_code == 200,
            lambda: f"reads did not recover:\n{log_tail(server)}",
        )
        after = http.patch(f"{CAPITAL}/s", json={"stateDelta": {"after": 1}})
        assert after.status_code == 200, after.text
        assert upload(http, b"after").status_code == 201
        assert capital_run(http, 1, "s").ok

        state = assert_consistent(http, CAPITAL, "s")
        assert {"before", "after"} <= state.keys()
        assert not {"during", "during_if_match"} & state.keys()  # answered 503: not committed
        assert http.get(f"{CAPITAL}/new").status_code == 404
        versions = http.get(f"{CAPITAL}/s/artifacts/doc.bin/versions")
        assert versions.json() == [0, 1]
        assert http.get(f"{CAPITAL}/s/artifacts/doc.bin/content").content == b"after"
    assert_blobs_agree(pg_version_rows(cluster, "faults_6b"), tmp_path / "data" / "blobs")
    stop_gracefully(server)


# -- 6f (SQLite): the database file made immutable, then writable again ----------------------


@contextmanager
def immutable(files: list[Path]) -> Iterator[None]:
    """`chattr +i` on the files inside the block; fails (never skips) where that cannot be done."""
    changed: list[Path] = []
    try:
        for path in files:
            try:
                done = subprocess.run(
                    ["chattr", "+i", str(path)], capture_output=True, text=True, check=False
                )
            except FileNotFoundError:
                pytest.fail(
                    "chattr is missing (e2fsprogs): this test needs it to make files immutable"
                )
            if done.returncode != 0:
                pytest.fail(
                    f"chattr +i {path} failed ({done.stderr.strip()}): this test needs a "
                    "filesystem with the immutable attribute (ext4, xfs, btrfs) and "
                    "CAP_LINUX_IMMUTABLE"
                )
            changed.append(path)
        yield
    finally:
        for path in changed:
            subprocess.run(["chattr", "-i", str(path)], check=True)


def test_sqlite_file_made_immutable_refuses_writes_with_503_serves_reads_and_recovers(
    tmp_path: Path, servers: list[LiveServer]
) -> None:
    server = start(servers, tmp_path / "a", server_settings(tmp_path))
    data = tmp_path / "data"
    db_file = data / "agentd.db"
    hidden = (str(tmp_path), "agentd.db")
    with httpx.Client(base_url=server.url, timeout=CLIENT_TIMEOUT) as http:
        create(http, CAPITAL, "s")
        assert http.patch(f"{CAPITAL}/s", json={"stateDelta": {"before": 1}}).status_code == 200
        assert upload(http, b"before").status_code == 201
        assert capital_run(http, 0, "s").ok
        before = http.get(f"{CAPITAL}/s")
        events_before = all_events(http, CAPITAL, "s")

        wal = data / "agentd.db-wal"
        assert wal.exists(), "the server's SQLite database is expected in WAL mode"
        with immutable([db_file, wal]):
            refused = [
                http.post(CAPITAL, json={"sessionId": "new"}),
                http.patch(f"{CAPITAL}/s", json={"stateDelta": {"during": 1}}),
                http.patch(
                    f"{CAPITAL}/s",
                    json={"stateDelta": {"during_if_match": 1}},
                    headers={"If-Match": before.headers["etag"]},
                ),
                http.post("/run", json=run_body("capital_agent", "s", "capital of Japan?")),
                upload(http, b"during"),
            ]
            for response in refused:
                assert_database_unavailable(response, *hidden)
            # What needs no write still answers.
            got = http.get(f"{CAPITAL}/s")
            assert got.status_code == 200, got.text
            assert got.json()["state"] == before.json()["state"]
            assert all_events(http, CAPITAL, "s") == events_before
            assert http.get(f"{CAPITAL}/s/artifacts/doc.bin/content").content == b"before"
            assert http.get(CAPITAL).status_code == 200

        # Writable again: writes succeed without a restart, the very first one included (checked
        # last, so that a failure still shows whether and how the server recovers).
        first = http.post(CAPITAL, json={"sessionId": "new"})
        if first.status_code != 201:
            poll(
                lambda: http.post(CAPITAL, json={"sessionId": "new"}).status_code == 201,
                lambda: f"writes did not recover:\n{log_tail(server)}",
                timeout=10,
            )
        after = http.patch(f"{CAPITAL}/s", json={"stateDelta": {"after": 1}})
        assert after.status_code == 200, after.text
        assert upload(http, b"after").status_code == 201
        answer = capital_run(http, 1, "s")
        assert answer.ok, answer

        state = assert_consistent(http, CAPITAL, "s")
        assert {"before", "after"} <= state.keys()
        assert not {"during", "during_if_match"} & state.keys()
        assert http.get(f"{CAPITAL}/s/artifacts/doc.bin/versions").json() == [0, 1]
    assert_blobs_agree(sqlite_version_rows(db_file), data / "blobs")
    stop_gracefully(server)
    assert first.status_code == 201, (
        f"the first write once the file was writable again: {first.status_code} {first.text}\n"
        f"{log_tail(server, 12)}"
    )
