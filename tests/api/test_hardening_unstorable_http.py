"""Values no JSON column can keep, over real HTTP on SQLite and PostgreSQL (issue 14: 1, 2, 7).

A lone surrogate, NaN / Infinity / an overflow to infinity, or an integer outside
[-2**63, 2**64 - 1] in any JSON body is a 422 `unstorable-value` whose `errors[0].loc` names the
field, and nothing is stored. The same values made by a tool, a callback or the model during a run
end the run with a typed error event; the session stays usable. Each backend gets one server
process for the module; each test works in a user and session of its own.
"""

import json
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from tests.live_server import LiveServer, build_agents_dir
from tests.pgserver import PostgresServer
from tests.problems import assert_problem

APP = "capital_agent"
#: A test app whose tools, callbacks and model make unstorable values on request.
UNSTORABLE_APP = "unstorable_values"
LONE = "\ud800"  # json.dumps writes it as the escape `\ud800`, as a client would send it
PAIR_TEXT = "\U0001f600"  # json.dumps writes it as the escaped pair `\ud83d\ude00`
OVERFLOW = "@OVERFLOW@"  # replaced by the number 1e999999 in the body's text
NON_FINITE = [float("nan"), float("inf"), float("-inf"), OVERFLOW]
BEYOND_64_BITS = [2**64, -(2**63) - 1, 10**39]
MAX_INT = 2**64 - 1
MIN_INT = -(2**63)
KEY = "@KEY@"  # in an expected `loc`: the unstorable key itself

UNSTORABLE_AGENT = '''
"""Makes an unstorable value where the user's message says: a tool's state delta, a callback's,
a function response, the model's function call arguments."""

from typing import Any

from app.agents import LlmAgent
from app.agents.callback_context import CallbackContext
from app.models import LlmRequest, LlmResponse
from app.models.scripted import Rule, ScriptedLlm
from app.tools.base_tool import BaseTool
from app.tools.tool_context import ToolContext


def nan_state(tool_context: ToolContext) -> str:
    """Writes NaN to state."""
    tool_context.state["bad"] = float("nan")
    return "ok"


def huge_state(tool_context: ToolContext) -> str:
    """Writes an integer beyond 64 bits to state."""
    tool_context.state["bad"] = 2**70
    return "ok"


def surrogate_state(tool_context: ToolContext) -> str:
    """Writes a lone surrogate to state."""
    tool_context.state["bad"] = "\\ud800"
    return "ok"


def infinite_result() -> dict[str, Any]:
    """Answers with Infinity."""
    return {"bad": float("inf")}


def noted(tool_context: ToolContext) -> str:
    """The after-tool callback writes NaN to state."""
    del tool_context
    return "ok"


def echo(x: Any = None) -> str:
    """Echoes its argument."""
    return str(x)


def after_tool(
    tool: BaseTool, args: dict[str, Any], tool_context: ToolContext, tool_response: Any
) -> None:
    del args, tool_response
    if tool.name == "noted":
        tool_context.state["bad"] = float("nan")


def before_model(callback_context: CallbackContext, llm_request: LlmRequest) -> LlmResponse | None:
    last = llm_request.contents[-1] if llm_request.contents else None
    text = "".join(p.text or "" for p in (last.parts or [])) if last is not None else ""
    if "model-callback" in text:
        callback_context.state["bad"] = float("nan")
    return None


root_agent = LlmAgent(
    name="unstorable_values",
    model=ScriptedLlm(
        rules=[
            Rule(when_user="nan-state", call=("nan_state", {})),
            Rule(when_user="huge-state", call=("huge_state", {})),
            Rule(when_user="surrogate-state", call=("surrogate_state", {})),
            Rule(when_user="infinite-result", call=("infinite_result", {})),
            Rule(when_user="tool-callback", call=("noted", {})),
            Rule(when_user="nan-args", call=("echo", {"x": float("nan")})),
            Rule(when_user="hello", say="Hello!"),
        ]
    ),
    tools=[nan_state, huge_state, surrogate_state, infinite_result, noted, echo],
    after_tool_callback=after_tool,
    before_model_callback=before_model,
)
'''


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LiveServer]:
    """One server per backend, with the shipped apps and the unstorable-values app."""
    root = tmp_path_factory.mktemp(f"hardening-unstorable-{request.param}")
    agents = build_agents_dir(root / "agents")
    (agents / UNSTORABLE_APP).mkdir()
    (agents / UNSTORABLE_APP / "__init__.py").write_text("")
    (agents / UNSTORABLE_APP / "agent.py").write_text(UNSTORABLE_AGENT)
    if request.param == "postgres":
        postgres: PostgresServer = request.getfixturevalue("postgres")
        template: str = request.getfixturevalue("pg_template")
        database_url = postgres.create_database(f"unstorable_{uuid.uuid4().hex}", template)
    else:
        database_url = f"sqlite+aiosqlite:///{root / 'agentd.db'}"
    live = LiveServer(
        root,
        {
            "AGENTD_DATABASE_URL": database_url,
            "AGENTD_DATA_DIR": str(root / "data"),
            "AGENTD_AGENTS_DIR": str(agents),
            "AGENTD_RATE_LIMIT_PER_MINUTE": "0",
        },
    ).start()
    yield live
    live.stop()


@pytest.fixture
def http(server: LiveServer) -> Iterator[httpx.Client]:
    """A client of the module's server."""
    with httpx.Client(base_url=server.url, timeout=30) as client:
        yield client


@dataclass
class World:
    """A user of its own with one session (`sid`) and a session id nobody created (`new`)."""

    http: httpx.Client
    user: str
    sid: str
    new: str

    @property
    def sessions(self) -> str:
        """The user's sessions collection."""
        return f"/apps/{APP}/users/{self.user}/sessions"

    def snapshot(self) -> dict[str, Any]:
        """Everything a refused request must leave as it was."""
        session = self.http.get(f"{self.sessions}/{self.sid}")
        assert session.status_code == 200, session.text
        body = session.json()
        listed = self.http.get(self.sessions)
        invocations = self.http.get(f"{self.sessions}/{self.sid}/invocations")
        artifacts = self.http.get(f"{self.sessions}/{self.sid}/artifacts")
        return {
            "etag": session.headers["etag"],
            "state": body["state"],
            "events": body["events"],
            "sessions": sorted(s["id"] for s in listed.json()),
            "invocations": invocations.json()["invocations"],
            "artifacts": artifacts.json(),
            "new": self.http.get(f"{self.sessions}/{self.new}").status_code,
        }


@pytest.fixture
def world(http: httpx.Client) -> World:
    """A fresh user with a session holding `{"seed": 1}` and no events."""
    user = f"u-{uuid.uuid4().hex[:12]}"
    created = http.post(
        f"/apps/{APP}/users/{user}/sessions", json={"sessionId": "s1", "state": {"seed": 1}}
    )
    assert created.status_code == 201, created.text
    return World(http=http, user=user, sid="s1", new="never-created")


def body_text(body: object) -> bytes:
    """The body as a client would send it: NaN/Infinity as Python's json writes them, surrogates
    as `\\uXXXX` escapes, OVERFLOW as the number 1e999999."""
    return json.dumps(body).replace(f'"{OVERFLOW}"', "1e999999").encode("ascii")


def send(http: httpx.Client, method: str, path: str, body: object) -> httpx.Response:
    """Send `body` as raw JSON text (httpx's `json=` would refuse NaN)."""
    return http.request(
        method, path, content=body_text(body), headers={"content-type": "application/json"}
    )


def message(text: str) -> dict[str, Any]:
    """A user message with one text part."""
    return {"role": "user", "parts": [{"text": text}]}


def run_body(world: World, **extra: Any) -> dict[str, Any]:
    """An ADK /run body for the world's session."""
    return {
        "appName": APP,
        "userId": world.user,
        "sessionId": world.sid,
        "newMessage": message("What is the capital of France?"),
        **extra,
    }


def assert_unstorable(response: httpx.Response, loc: list[str | int]) -> None:
    """422 unstorable-value naming the field at `loc`. A key that is itself unstorable
    (KEY at the end of `loc`) may be named in any form the answer can carry."""
    assert_problem(response, 422, "unstorable-value")
    body = response.json()
    error = body["errors"][0]
    assert error["type"] == "unstorable_value", body
    if loc[-1] == KEY:
        assert error["loc"][:-1] == loc[:-1], body
        assert len(error["loc"]) == len(loc), body
        assert isinstance(error["loc"][-1], str), body
    else:
        assert error["loc"] == loc, body
    assert body["detail"].startswith(".".join(str(part) for part in loc if part != KEY)), body


@dataclass(frozen=True)
class Case:
    """One request carrying `value` at `loc` of its body."""

    method: str
    path: Callable[[World], str]
    body: Callable[[World, object], object]
    loc: list[str | int]


def _sessions(world: World) -> str:
    return world.sessions


def _session(world: World) -> str:
    return f"{world.sessions}/{world.sid}"


def _new_session(world: World) -> str:
    return f"{world.sessions}/{world.new}"


def _invocations(world: World) -> str:
    return f"{world.sessions}/{world.sid}/invocations"


def _artifacts(world: World) -> str:
    return f"{world.sessions}/{world.sid}/artifacts"


def _memory(world: World) -> str:
    return f"/apps/{APP}/users/{world.user}/memory"


def _run(_world: World) -> str:
    return "/run"


def _run_sse(_world: World) -> str:
    return "/run_sse"


CREATE_STATE = Case(
    "POST", _sessions, lambda w, v: {"sessionId": w.new, "state": {"k": v}}, ["body", "state", "k"]
)
CREATE_WITH_ID = Case("POST", _new_session, lambda _w, v: {"k": v}, ["body", "k"])
PATCH_DELTA = Case(
    "PATCH", _session, lambda _w, v: {"stateDelta": {"k": v}}, ["body", "stateDelta", "k"]
)
RUN_DELTA = Case(
    "POST", _run, lambda w, v: run_body(w, stateDelta={"k": v}), ["body", "stateDelta", "k"]
)
RUN_METADATA = Case(
    "POST",
    _run,
    lambda w, v: run_body(w, customMetadata={"m": v}),
    ["body", "customMetadata", "m"],
)
INVOCATION_DELTA = Case(
    "POST",
    _invocations,
    lambda _w, v: {"newMessage": message("hi"), "stateDelta": {"k": v}},
    ["body", "stateDelta", "k"],
)

SURROGATE_CASES = {
    "create-state": CREATE_STATE,
    "create-state-key": Case(
        "POST",
        _sessions,
        lambda w, v: {"sessionId": w.new, "state": {"ok": 1, str(v): 1}},
        ["body", "state", KEY],
    ),
    "create-with-id-state": CREATE_WITH_ID,
    "patch-state-delta": PATCH_DELTA,
    "patch-state-delta-nested-key": Case(
        "PATCH",
        _session,
        lambda _w, v: {"stateDelta": {"nested": [{"ok": 1}, {str(v): 1}]}},
        ["body", "stateDelta", "nested", 1, KEY],
    ),
    "run-message-text": Case(
        "POST",
        _run,
        lambda w, v: run_body(w, newMessage=message(f"capital of {v}?")),
        ["body", "newMessage", "parts", 0, "text"],
    ),
    "run-state-delta": RUN_DELTA,
    "run-sse-message-text": Case(
        "POST",
        _run_sse,
        lambda w, v: run_body(w, newMessage=message(f"capital of {v}?")),
        ["body", "newMessage", "parts", 0, "text"],
    ),
    "invocation-message-text": Case(
        "POST",
        _invocations,
        lambda _w, v: {"newMessage": message(f"capital of {v}?")},
        ["body", "newMessage", "parts", 0, "text"],
    ),
    "invocation-state-delta": INVOCATION_DELTA,
    "artifact-text": Case(
        "POST",
        _artifacts,
        lambda _w, v: {"filename": "notes.txt", "artifact": {"text": f"a{v}b"}},
        ["body", "artifact", "text"],
    ),
    "artifact-custom-metadata": Case(
        "POST",
        _artifacts,
        lambda _w, v: {
            "filename": "notes.txt",
            "artifact": {"text": "fine"},
            "customMetadata": {"m": v},
        },
        ["body", "customMetadata", "m"],
    ),
    "artifact-filename": Case(
        "POST",
        _artifacts,
        lambda _w, v: {"filename": f"notes{v}.txt", "artifact": {"text": "fine"}},
        ["body", "filename"],
    ),
    "memory-session-id": Case(
        "PATCH", _memory, lambda _w, v: {"sessionId": v}, ["body", "sessionId"]
    ),
}


@pytest.mark.parametrize("case", SURROGATE_CASES.values(), ids=SURROGATE_CASES.keys())
def test_lone_surrogate_in_a_json_body_is_422_naming_the_field_and_stores_nothing(
    world: World, case: Case
) -> None:
    before = world.snapshot()
    response = send(world.http, case.method, case.path(world), case.body(world, LONE))
    assert_unstorable(response, case.loc)
    assert world.snapshot() == before


def test_surrogate_pair_is_accepted_and_stored_as_the_character(world: World) -> None:
    http = world.http
    created = send(http, "POST", world.sessions, {"sessionId": "emoji", "state": {"e": PAIR_TEXT}})
    assert created.status_code == 201, created.text
    with_id = send(http, "POST", f"{world.sessions}/emoji2", {PAIR_TEXT: PAIR_TEXT})
    assert with_id.status_code == 201, with_id.text
    patched = send(http, "PATCH", f"{world.sessions}/emoji", {"stateDelta": {"f": PAIR_TEXT}})
    assert patched.status_code == 200, patched.text
    ran = send(
        http,
        "POST",
        "/run",
        {
            "appName": APP,
            "userId": world.user,
            "sessionId": "emoji",
            "newMessage": message(f"{PAIR_TEXT} What is the capital of France?"),
        },
    )
    assert ran.status_code == 200, ran.text
    saved = send(
        http,
        "POST",
        f"{world.sessions}/emoji/artifacts",
        {"filename": f"smile{PAIR_TEXT}.txt", "artifact": {"text": PAIR_TEXT}},
    )
    assert saved.status_code == 201, saved.text

    session = http.get(f"{world.sessions}/emoji").json()
    assert session["state"]["e"] == PAIR_TEXT
    assert session["state"]["f"] == PAIR_TEXT
    assert session["events"][1]["content"]["parts"][0]["text"].startswith(PAIR_TEXT)
    assert http.get(f"{world.sessions}/emoji2").json()["state"][PAIR_TEXT] == PAIR_TEXT
    content = http.get(f"{world.sessions}/emoji/artifacts/smile{PAIR_TEXT}.txt/versions/0/content")
    assert content.status_code == 200, content.text
    assert content.content == PAIR_TEXT.encode()


NON_FINITE_ROUTES = {
    "create-state": CREATE_STATE,
    "create-with-id-state": CREATE_WITH_ID,
    "patch-state-delta": PATCH_DELTA,
    "run-state-delta": RUN_DELTA,
    "invocation-state-delta": INVOCATION_DELTA,
}


@pytest.mark.parametrize("value", NON_FINITE, ids=["NaN", "Infinity", "-Infinity", "1e999999"])
@pytest.mark.parametrize("case", NON_FINITE_ROUTES.values(), ids=NON_FINITE_ROUTES.keys())
def test_non_finite_number_is_422_and_stores_nothing(
    world: World, case: Case, value: object
) -> None:
    before = world.snapshot()
    response = send(world.http, case.method, case.path(world), case.body(world, value))
    assert_unstorable(response, case.loc)
    assert world.snapshot() == before


INTEGER_ROUTES = {**NON_FINITE_ROUTES, "run-custom-metadata": RUN_METADATA}


@pytest.mark.parametrize("value", BEYOND_64_BITS, ids=["2**64", "-2**63-1", "40-digits"])
@pytest.mark.parametrize("case", INTEGER_ROUTES.values(), ids=INTEGER_ROUTES.keys())
def test_integer_beyond_64_bits_is_422_naming_the_field(
    world: World, case: Case, value: int
) -> None:
    before = world.snapshot()
    response = send(world.http, case.method, case.path(world), case.body(world, value))
    assert_unstorable(response, case.loc)
    assert world.snapshot() == before


def test_64_bit_boundary_integers_are_stored_and_read_back_exactly(world: World) -> None:
    http = world.http
    bounds = {"max": MAX_INT, "min": MIN_INT, "list": [MAX_INT, MIN_INT], "obj": {"m": MAX_INT}}
    created = send(http, "POST", world.sessions, {"sessionId": "ints", "state": bounds})
    assert created.status_code == 201, created.text
    assert created.json()["state"] == bounds
    patched = send(
        http, "PATCH", f"{world.sessions}/ints", {"stateDelta": {"pmax": MAX_INT, "pmin": MIN_INT}}
    )
    assert patched.status_code == 200, patched.text
    ran = send(
        http,
        "POST",
        "/run",
        {
            **run_body(world, stateDelta={"rmax": MAX_INT, "rmin": MIN_INT}),
            "sessionId": "ints",
            "customMetadata": {"c": MAX_INT},
        },
    )
    assert ran.status_code == 200, ran.text

    session = http.get(f"{world.sessions}/ints").json()
    expected = {**bounds, "pmax": MAX_INT, "pmin": MIN_INT, "rmax": MAX_INT, "rmin": MIN_INT}
    assert {k: session["state"][k] for k in expected} == expected
    deltas = [e["actions"]["stateDelta"] for e in session["events"]]
    assert {"pmax": MAX_INT, "pmin": MIN_INT} in deltas
    assert {"rmax": MAX_INT, "rmin": MIN_INT} in deltas
    page = http.get(f"{world.sessions}/ints/events").json()
    assert [e["actions"]["stateDelta"] for e in page["events"]] == deltas


#: What the user says to the unstorable-values app, and where the value lands in the event.
RUN_TRIGGERS = {
    "tool-state-nan": "nan-state",
    "tool-state-huge-int": "huge-state",
    "tool-state-lone-surrogate": "surrogate-state",
    "tool-result-infinity": "infinite-result",
    "after-tool-callback-state-nan": "tool-callback",
    "before-model-callback-state-nan": "model-callback",
    "model-call-args-nan": "nan-args",
}


def _app_sessions(user: str) -> str:
    return f"/apps/{UNSTORABLE_APP}/users/{user}/sessions"


def _assert_failed_cleanly(http: httpx.Client, user: str, sid: str, answer: httpx.Response) -> None:
    """The run answered 422 unstorable-value and ended with its error event; nothing unstorable
    was kept (not even as null) and the session still serves writes and runs."""
    assert_problem(answer, 422, "unstorable-value")
    session = http.get(f"{_app_sessions(user)}/{sid}")
    assert session.status_code == 200, session.text
    body = session.json()
    events = body["events"]
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert events[0]["author"] == "user"
    own = [e for e in events if e["invocationId"] == events[0]["invocationId"]]
    assert own == events, "events of another invocation in a fresh session"
    assert events[-1].get("errorCode") == "unstorable-value", events[-1]
    assert "bad" not in body["state"]
    assert all("bad" not in e.get("actions", {}).get("stateDelta", {}) for e in events)
    invocations = http.get(f"{_app_sessions(user)}/{sid}/invocations").json()["invocations"]
    assert [i["status"] for i in invocations] == ["failed"]
    assert invocations[0]["error"]["type"] == "unstorable-value"

    patched = http.patch(f"{_app_sessions(user)}/{sid}", json={"stateDelta": {"after": 1}})
    assert patched.status_code == 200, patched.text
    again = http.post(
        "/run",
        json={
            "appName": UNSTORABLE_APP,
            "userId": user,
            "sessionId": sid,
            "newMessage": message("hello"),
        },
    )
    assert again.status_code == 200, again.text
    assert again.json()[-1]["content"]["parts"][0]["text"] == "Hello!"


@pytest.mark.parametrize("trigger", RUN_TRIGGERS.values(), ids=RUN_TRIGGERS.keys())
def test_unstorable_value_made_during_a_run_ends_it_with_a_typed_error_event(
    http: httpx.Client, trigger: str
) -> None:
    user = f"u-{uuid.uuid4().hex[:12]}"
    assert http.post(_app_sessions(user), json={"sessionId": "s1"}).status_code == 201
    answer = http.post(
        "/run",
        json={
            "appName": UNSTORABLE_APP,
            "userId": user,
            "sessionId": "s1",
            "newMessage": message(trigger),
        },
    )
    _assert_failed_cleanly(http, user, "s1", answer)


def test_unstorable_tool_state_fails_a_waited_invocation_with_the_documented_problem(
    http: httpx.Client,
) -> None:
    user = f"u-{uuid.uuid4().hex[:12]}"
    assert http.post(_app_sessions(user), json={"sessionId": "s1"}).status_code == 201
    answer = http.post(
        f"{_app_sessions(user)}/s1/invocations",
        json={"newMessage": message("nan-state"), "mode": "wait"},
    )
    _assert_failed_cleanly(http, user, "s1", answer)
