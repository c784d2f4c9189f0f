"""Test apps that record what their model is sent and how often their tools run, and the
helpers of the tests that replay ADK's recorded flows (`tests/data/adk-fixtures`) against them
over real HTTP on both backends (issue 27).

An app's source is `RECORDING_PREAMBLE` followed by its own: a `CALL` (the model's function
call), its tools, and its `root_agent` (or `app`) with `model=RecordingLlm()` and
`before_model_callback=_label_session`. The model, after a function response, says `<tool>
answered: <response json>`; after anything else it calls `CALL`. The model records every request
(its contents as JSON) and the tools every run (`_record(tool_context.session_id, what="tool",
...)`), one JSON line per session in the `records` folder beside the agents folder; `logged`
reads them back.
"""

import json
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.adk_fixtures import FIXTURES
from tests.api.served import get_json, on_both_backends
from tests.live_server import LiveServer, iter_sse

USER = "u1"

RECORDING_PREAMBLE = '''
import json
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

from google.genai import types

from app.agents import LlmAgent
from app.models.llm import LlmRequest, LlmResponse
from app.models.scripted import ScriptedLlm
from app.tools.tool_context import ToolContext

RECORDS = Path(__file__).resolve().parents[2] / "records"


def _record(session_id: str, **entry: Any) -> None:
    RECORDS.mkdir(exist_ok=True)
    with (RECORDS / f"{session_id}.jsonl").open("a") as log:
        log.write(json.dumps(entry) + "\\n")


class RecordingLlm(ScriptedLlm):
    """After a function response: "<tool> answered: <response json>"; else CALL. Every
    request is recorded (its contents as JSON) under the session its labels name."""

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        labels = (llm_request.config.labels if llm_request.config else None) or {}
        contents = [c.model_dump(mode="json", exclude_none=True) for c in llm_request.contents]
        _record(labels.get("session", ""), what="model", contents=contents)
        last = llm_request.contents[-1] if llm_request.contents else None
        answer = next(
            (p.function_response for p in (last.parts or []) if p.function_response),
            None,
        ) if last is not None else None
        if answer is not None:
            text = f"{answer.name} answered: {json.dumps(answer.response, sort_keys=True)}"
            part = types.Part(text=text)
        else:
            part = types.Part(function_call=types.FunctionCall(**CALL))
        yield LlmResponse(
            content=types.Content(role="model", parts=[part]), partial=False, turn_complete=True
        )


def _label_session(callback_context: Any, llm_request: LlmRequest) -> None:
    if llm_request.config is not None:
        llm_request.config.labels = {"session": callback_context.session.id}
'''


def write_apps(root: Path, sources: dict[str, str]) -> Path:
    """Each app (name: its own source) as `agents/<name>/agent.py` under `root`, its source
    after `RECORDING_PREAMBLE`: the agents folder."""
    agents = root / "agents"
    for name, source in sources.items():
        folder = agents / name
        folder.mkdir(parents=True)
        (folder / "agent.py").write_text(
            textwrap.dedent(RECORDING_PREAMBLE) + textwrap.dedent(source)
        )
    return agents


def recording_servers(name: str, sources: dict[str, str]) -> tuple[Any, Any, Any]:
    """The `sqlite_server`, `postgres_server` and `served` fixtures of one test module, its
    apps written by `write_apps`. `served` is parametrized over the two backends: a client of
    the backend's server, and the folder its apps record into."""
    sqlite_server, postgres_server, _ = on_both_backends(
        name, lambda root: write_apps(root, sources)
    )

    @pytest.fixture(params=["sqlite", "postgres"])
    def served(request: pytest.FixtureRequest) -> Iterator[tuple[httpx.Client, Path]]:
        server: LiveServer = request.getfixturevalue(f"{request.param}_server")
        records = Path(server.env["AGENTD_AGENTS_DIR"]).parent / "records"
        with httpx.Client(base_url=server.url, timeout=30) as client:
            yield client, records

    return sqlite_server, postgres_server, served


def recorded_flow(name: str) -> dict[str, dict[str, Any]]:
    """The exchanges of a recorded flow (`tests/data/adk-fixtures/<name>.json`), by name."""
    exchanges = json.loads((FIXTURES / f"{name}.json").read_text())
    return {exchange["name"]: exchange for exchange in exchanges}


def logged(records: Path, sid: str, what: str) -> list[dict[str, Any]]:
    """What the apps recorded for session `sid`: the `what` ("model" or "tool") entries."""
    path = records / f"{sid}.jsonl"
    lines = path.read_text().splitlines() if path.exists() else []
    return [entry for entry in map(json.loads, lines) if entry["what"] == what]


def new_session(http: httpx.Client, app: str) -> str:
    """A new session of `app` (for USER): its id."""
    sid = f"s-{uuid.uuid4().hex[:12]}"
    created = http.post(f"/apps/{app}/users/{USER}/sessions", json={"sessionId": sid})
    assert created.status_code == 201, created.text  # ADK: 200 (a README difference)
    return sid


def get_session(http: httpx.Client, app: str, sid: str) -> dict[str, Any]:
    """GET session: the session, its events and state."""
    body: dict[str, Any] = get_json(http, f"/apps/{app}/users/{USER}/sessions/{sid}")
    return body


def list_invocations(http: httpx.Client, app: str, sid: str) -> list[dict[str, Any]]:
    """The session's invocations, as agentd lists them."""
    listed: list[dict[str, Any]] = get_json(
        http, f"/apps/{app}/users/{USER}/sessions/{sid}/invocations"
    )["invocations"]
    return listed


def statuses(http: httpx.Client, app: str, sid: str) -> list[tuple[str, str]]:
    """Each of the session's invocations as (id, status)."""
    return [(i["id"], i["status"]) for i in list_invocations(http, app, sid)]


def run_sse(http: httpx.Client, app: str, sid: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    """ADK's `POST /run_sse` with `body` (a recorded one, or as the dev UI sends it), for
    `app`'s session `sid`: the events of its frames."""
    sent = {**body, "appName": app, "sessionId": sid}
    with http.stream("POST", "/run_sse", json=sent) as response:
        assert response.status_code == 200, response.read()
        assert response.headers["content-type"].startswith("text/event-stream")
        frames = list(iter_sse(response.iter_lines()))
    return [json.loads(f.data) for f in frames if f.data]
