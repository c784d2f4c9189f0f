"""Acceptance over real HTTP: an app folder holding only ADK's `root_agent.yaml`, with a gemini-*
model, answers through `/run` against the local Gemini stub (the google-genai client's base URL
pointed at it through AGENTD_GEMINI_BASE_URL; no network), and a broken config answers the
`app-load-failed` problem. Code references outside the app's folder and agentd's safe names are
refused before anything runs (issue 26: `yaml.unsafe_load` of a `!!python/object/apply:os.system`
tag ran a shell command), and no problem shows a server path."""

import json
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.gemini_stub import GeminiStub
from tests.live_server import LiveServer

APP = "yaml_city_guide"
BROKEN = "yaml_broken"
BUILT_IN = "yaml_built_in"
UNSAFE = "yaml_unsafe"
SYNTAX = "yaml_syntax"
PY_BROKEN = "py_broken"
MODEL = "gemini-2.0-flash"
#: Apps whose root_agent.yaml calls a refused reference with an argument that would leave a
#: file in the markers folder (MARKERS) if it ran.
REFUSED: dict[str, tuple[str, str | list[str]]] = {
    "yaml_os_system": ("os.system", "touch MARKERS/os_system"),
    "yaml_subprocess_run": ("subprocess.run", ["touch", "MARKERS/subprocess_run"]),
    "yaml_builtins_eval": ("builtins.eval", "open('MARKERS/builtins_eval', 'w')"),
    "yaml_importlib": ("importlib.import_module", "sqlite3"),
}

UNSAFE_YAML = f"""
name: unsafe
model: {MODEL}
before_agent_callbacks:
  - name: yaml.unsafe_load
    args:
      - value: '!!python/object/apply:os.system ["touch MARKERS/unsafe_load"]'
"""

BUILT_IN_YAML = f"""
name: chooser
model: {MODEL}
instruction: Offer a choice when asked.
tools:
  - name: exit_loop
  - name: google.adk.tools.get_user_choice
"""

#: An agent.py that fails at import with an error naming a file in its folder.
PY_BROKEN_AGENT = "from pathlib import Path\n(Path(__file__).parent / 'missing.txt').read_text()\n"

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
    root: Path
    markers: Path


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
    markers = root / "markers"
    markers.mkdir()
    apps = {
        BUILT_IN: BUILT_IN_YAML,
        UNSAFE: UNSAFE_YAML.replace("MARKERS", str(markers)),
        SYNTAX: "name: [unclosed\n",
    }
    for app, (reference, argument) in REFUSED.items():
        value = json.dumps(argument).replace("MARKERS", str(markers))
        apps[app] = (
            f"name: refused\nmodel_code:\n  name: {reference}\n  args:\n    - value: {value}\n"
        )
    for app, text in apps.items():
        (agents / app).mkdir()
        (agents / app / "root_agent.yaml").write_text(textwrap.dedent(text))
    (agents / PY_BROKEN).mkdir()
    (agents / PY_BROKEN / "agent.py").write_text(PY_BROKEN_AGENT)
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
                yield Served(http=client, stub=stub, root=root, markers=markers)
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


def _assert_load_failed_without_paths(response: httpx.Response, served: Served) -> str:
    """The app-load-failed problem (a 500: the operator's app is broken); its detail returned."""
    assert response.status_code == 500, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    problem = response.json()
    assert problem["type"] == "app-load-failed"
    assert str(served.root) not in response.text
    assert "/" not in response.text  # no path of any kind, relative to the server or not
    detail: str = problem["detail"]
    return detail


def test_yaml_unsafe_load_of_a_python_tag_is_refused_and_runs_nothing(served: Served) -> None:
    detailed = served.http.get("/list-apps?detailed=true")
    assert detailed.status_code == 200, detailed.text
    apps = {app["name"]: app for app in detailed.json()["apps"]}
    assert apps[UNSAFE]["rootAgentName"] == UNSAFE  # listed as every broken app is: by folder

    run = _run(served.http, UNSAFE, "s-unsafe", "hello")
    invocation = served.http.post(
        f"/apps/{UNSAFE}/users/u1/sessions/s-unsafe/invocations",
        json={"newMessage": {"role": "user", "parts": [{"text": "hello"}]}},
    )

    for response in (run, invocation):
        detail = _assert_load_failed_without_paths(response, served)
        assert f"App {UNSAFE!r}, agent config root_agent.yaml: " in detail
        assert "'yaml.unsafe_load' is refused" in detail
    assert list(served.markers.iterdir()) == []


@pytest.mark.parametrize("app", sorted(REFUSED))
def test_a_code_reference_into_the_standard_library_is_refused(served: Served, app: str) -> None:
    reference, _ = REFUSED[app]
    served.http.get("/list-apps?detailed=true").raise_for_status()

    detail = _assert_load_failed_without_paths(_run(served.http, app, "s1", "hello"), served)

    assert f"{reference!r} is refused" in detail
    assert list(served.markers.iterdir()) == []


@pytest.mark.parametrize(
    ("app", "shown"),
    [
        (SYNTAX, "agent config root_agent.yaml: is not valid YAML (line 2, column 1)"),
        (PY_BROKEN, "FileNotFoundError: [Errno 2] No such file or directory: 'missing.txt'"),
    ],
)
def test_a_problem_loading_an_app_shows_no_server_path(
    served: Served, app: str, shown: str
) -> None:
    detail = _assert_load_failed_without_paths(_run(served.http, app, "s1", "hello"), served)
    assert shown in detail


def test_a_safe_built_in_tool_named_by_a_config_still_works(served: Served) -> None:
    served.stub.reply_text("Found it.")

    response = _run(served.http, BUILT_IN, "s1", "Offer me a choice")

    assert response.status_code == 200, response.text
    assert _parts(response.json())[-1] == {"text": "Found it."}
    (request,) = served.stub.requests[-1:]
    (declarations,) = [t["functionDeclarations"] for t in request["body"]["tools"]]
    assert [d["name"] for d in declarations] == ["exit_loop", "get_user_choice"]
