"""A model without credentials, over real HTTP: `/run` answers 503 `model-not-configured`
naming the variable to set, for every backend, and the stored error event has the same type.

The server runs with every provider variable removed from its environment (keys, base URLs,
Azure and Vertex settings), on a test agents folder of one tiny app per backend.
"""

import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.models.lite_llm import _COMPATIBLE
from tests.conftest import fresh_sqlite_url
from tests.live_server import LiveServer

#: Prefixes and parts of the names of every variable a model backend reads credentials from.
_PROVIDER_PREFIXES = ("OPENAI_", "AZURE_", "ANTHROPIC_", "GOOGLE_", "GEMINI_", "CLOUDSDK_")
_PROVIDER_PARTS = ("API_KEY", "API_BASE", "AUTH_TOKEN", "AD_TOKEN")

#: The hosted OpenAI-compatible LiteLlm providers: each needs its key.
HOSTED = sorted(name for name, spec in _COMPATIBLE.items() if spec.default_key is None)

#: app name -> (the model expression of its agent, the variable its problem must name).
APPS: dict[str, tuple[str, str]] = {
    "gemini_app": ('"gemini-2.5-flash"', "GOOGLE_API_KEY"),
    "litellm_gemini_app": ('LiteLlm(model="gemini/gemini-2.5-flash")', "GOOGLE_API_KEY"),
    "openai_app": ('"gpt-4o-mini"', "OPENAI_API_KEY"),
    "azure_openai_app": (
        'OpenAILlm(model="my-deployment", api_version="2024-10-21")',
        "AZURE_OPENAI_API_KEY",
    ),
    "litellm_azure_app": ('LiteLlm(model="azure/my-deployment")', "AZURE_API_KEY"),
    "claude_app": ('"claude-sonnet-4-5"', "ANTHROPIC_API_KEY"),
    "litellm_anthropic_app": (
        'LiteLlm(model="anthropic/claude-sonnet-4-5")',
        "ANTHROPIC_API_KEY",
    ),
    **{
        f"litellm_{provider}_app": (
            f'LiteLlm(model="{provider}/some-model")',
            str(_COMPATIBLE[provider].api_key_env),
        )
        for provider in HOSTED
    },
}


def _without_provider_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith(_PROVIDER_PREFIXES) or any(p in name for p in _PROVIDER_PARTS):
            monkeypatch.delenv(name)


def _write_agents(root: Path) -> Path:
    agents = root / "agents"
    for name, (model, _) in APPS.items():
        folder = agents / name
        folder.mkdir(parents=True)
        (folder / "__init__.py").write_text("from . import agent\n")
        (folder / "agent.py").write_text(
            "from app.agents import LlmAgent\n"
            "from app.models import LiteLlm, OpenAILlm\n\n"
            f"root_agent = LlmAgent(name={name!r}, model={model})\n"
        )
    return agents


def _server(root: Path, sqlite_template: Path, **settings: str) -> LiveServer:
    env = {
        "AGENTD_DATA_DIR": str(root / "data"),
        "AGENTD_AGENTS_DIR": str(_write_agents(root)),
        "AGENTD_DATABASE_URL": fresh_sqlite_url(sqlite_template, root),
        **settings,
    }
    with pytest.MonkeyPatch.context() as monkeypatch:
        _without_provider_variables(monkeypatch)  # the process copies the environment now
        return LiveServer(root / "server", env).start()


@pytest.fixture(scope="module")
def http(tmp_path_factory: pytest.TempPathFactory, sqlite_template: Path) -> Iterator[httpx.Client]:
    """A client of a server that has no provider variable at all."""
    server = _server(tmp_path_factory.mktemp("unconfigured"), sqlite_template)
    try:
        with httpx.Client(base_url=server.url, timeout=60) as client:
            yield client
    finally:
        server.stop()


def _run(http: httpx.Client, app: str, session_id: str) -> httpx.Response:
    created = http.post(f"/apps/{app}/users/u/sessions", json={"sessionId": session_id})
    assert created.status_code == 201, created.text
    return http.post(
        "/run",
        json={
            "appName": app,
            "userId": "u",
            "sessionId": session_id,
            "newMessage": {"role": "user", "parts": [{"text": "hello"}]},
        },
    )


def _assert_names_the_fix(http: httpx.Client, app: str, variable: str) -> dict[str, Any]:
    """`/run` of `app` is a 503 model-not-configured naming `variable`, and so is its stored
    error event; the problem."""
    session_id = uuid.uuid4().hex
    answer = _run(http, app, session_id)

    assert answer.status_code == 503, answer.text
    assert answer.headers["content-type"].startswith("application/problem+json")
    assert "retry-after" not in answer.headers  # no retry helps: the operator must configure it
    problem: dict[str, Any] = answer.json()
    assert problem["type"] == "model-not-configured"
    assert variable in problem["detail"]
    assert variable in problem["variables"]
    session = http.get(f"/apps/{app}/users/u/sessions/{session_id}").json()
    error = session["events"][-1]
    assert (error["errorCode"], error["errorMessage"]) == (
        "model-not-configured",
        problem["detail"],
    )
    return problem


@pytest.mark.parametrize(("app", "variable"), [(a, v) for a, (_, v) in APPS.items()])
def test_a_model_without_credentials_names_the_variable_to_set(
    http: httpx.Client, app: str, variable: str
) -> None:
    _assert_names_the_fix(http, app, variable)


def test_gemini_names_gemini_api_key_too_and_how_to_use_vertex_ai(http: httpx.Client) -> None:
    detail = _run(http, "gemini_app", uuid.uuid4().hex).json()["detail"]

    assert "GEMINI_API_KEY" in detail
    assert "GOOGLE_GENAI_USE_VERTEXAI" in detail


def test_gemini_on_vertex_ai_names_the_vertex_variables(
    tmp_path: Path, sqlite_template: Path
) -> None:
    server = _server(
        tmp_path,
        sqlite_template,
        GOOGLE_GENAI_USE_VERTEXAI="true",
        # Where application default credentials are looked up first: missing, so google-auth
        # fails at once, without looking for a metadata server on the network.
        GOOGLE_APPLICATION_CREDENTIALS=str(tmp_path / "missing-credentials.json"),
    )
    try:
        with httpx.Client(base_url=server.url, timeout=60) as http:
            problem = _assert_names_the_fix(http, "gemini_app", "GOOGLE_CLOUD_PROJECT")
    finally:
        server.stop()

    assert problem["provider"] == "vertex_ai"
    assert "GOOGLE_APPLICATION_CREDENTIALS" in problem["detail"]
