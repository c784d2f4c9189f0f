"""Acceptance over real HTTP: an app folder holding only ADK's `root_agent.yaml`, with a gemini-*
model, answers through `/run` against the local Gemini stub (the google-genai client's base URL
pointed at it through AGENTD_GEMINI_BASE_URL; no network), and a broken config answers the
`app-load-failed` problem."""

import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from tests.gemini_stub import GeminiStub
from tests.live_server import LiveServer

APP = "yaml_city_guide"
BROKEN = "yaml_broken"
MODEL = "gemini-2.0-flash"

ROOT_AGENT_YAML = f"""
name: city_guide
model: {MODEL}
description: Answers questions about cities.
instruction: You answer questions about cities; call lookup first.
tools:
  - name: {APP}.tools.lookup
"""

TOOLS_PY = '''
def lookup(city: str) -> dict:
    """Looks up what is known about a city.

    Args:
        city: The city's name.
    """
    return {"city": city, "note": f"{city} is lovely"}
'''


@dataclass
class Served:
    """A live server with the config apps, its client and the Gemini stub it calls."""

    http: httpx.Client
    stub: GeminiStub


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """A server whose agents dir holds a working and a broken root_agent.yaml app."""
    root = tmp_path_factory.mktemp("agent-config")
    agents = root / "agents"
    (agents / APP).mkdir(parents=True)
    (agents / APP / "root_agent.yaml").write_text(textwrap.dedent(ROOT_AGENT_YAML))
    (agents / APP / "tools.py").write_text(TOOLS_PY)
    (agents / BROKEN).mkdir()
    (agents / BROKEN / "root_agent.yaml").write_text("name: broken\ntools:\n  - name: nope\n")
    with GeminiStub() as stub:
        env = {
            "AGENTD_DATA_DIR": str(root / "data"),
            "AGENTD_AGENTS_DIR": str(agents),
            "AGENTD_GEMINI_BASE_URL": stub.base_url,
            "GOOGLE_API_KEY": "test-key",
            "GEMINI_API_KEY": "test-key",
            "GOOGLE_GENAI_USE_VERTEXAI": "false",
        }
        server = LiveServer(root / "server", env).start()
        try:
            with httpx.Client(base_url=server.url, timeout=30) as client:
                yield Served(http=client, stub=stub)
        finally:
            server.stop()


def _run(http: httpx.Client, app: str, sid: str, text: str) -> httpx.Response:
    created = http.post(f"/apps/{app}/users/u1/sessions", json={"sessionId": sid})
    assert created.status_code == 201, created.text
    body = {
        "appName": app,
        "userId": "u1",
        "sessionId": sid,
        "newMessage": {"role": "user", "parts": [{"text": text}]},
    }
    return http.post("/run", json=body)


def _parts(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [part for event in events for part in (event.get("content") or {}).get("parts", [])]


def test_root_agent_yaml_app_with_a_gemini_model_answers_through_run(served: Served) -> None:
    served.stub.reply_function_call("lookup", {"city": "Lyon"})
    served.stub.reply_text("Lyon is lovely.")

    response = _run(served.http, APP, "s1", "Tell me about Lyon")

    assert response.status_code == 200, response.text
    parts = _parts(response.json())
    assert parts[0]["functionCall"]["name"] == "lookup"
    answer = parts[1]["functionResponse"]
    assert (answer["name"], answer["response"]) == (
        "lookup",
        {"city": "Lyon", "note": "Lyon is lovely"},
    )
    assert parts[-1] == {"text": "Lyon is lovely."}

    first, second = served.stub.requests
    assert first["model"] == second["model"] == MODEL
    system = first["body"]["systemInstruction"]["parts"][0]["text"]
    assert "You answer questions about cities" in system
    (declarations,) = [t["functionDeclarations"] for t in first["body"]["tools"]]
    assert [d["name"] for d in declarations] == ["lookup"]
    assert served.stub.pending == 0


def test_list_apps_shows_config_apps_with_their_root_agent(served: Served) -> None:
    assert {APP, BROKEN} <= set(served.http.get("/list-apps").json())
    detailed = served.http.get("/list-apps?detailed=true")
    assert detailed.status_code == 200, detailed.text
    apps = {app["name"]: app for app in detailed.json()["apps"]}
    assert apps[APP]["rootAgentName"] == "city_guide"


def test_a_broken_root_agent_yaml_answers_app_load_failed(served: Served) -> None:
    response = _run(served.http, BROKEN, "s1", "hello")
    assert response.status_code == 500
    assert response.headers["content-type"].startswith("application/problem+json")
    problem = response.json()
    assert problem["type"] == "app-load-failed"
    assert "root_agent.yaml" in problem["detail"]
