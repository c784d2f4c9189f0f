"""ADK 2.13's sample agents that named what agentd lacked now load, written as ADK writes them
(with `google.adk` renamed to `app`): an MCP toolset on bare `StdioServerParameters` imported
from `mcp_toolset`, one on the older `StreamableHTTPServerParams`, and a `LiteLlm` on a
provider agentd cannot serve, which loads and fails its first model call with a typed problem
(issue 27, acceptance 4)."""

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.agents import LlmAgent
from app.invocations.registry import AppRegistry
from app.main import create_app
from app.settings import Settings
from app.tools.mcp_tool.mcp_session_manager import (
    StdioConnectionParams,
    StreamableHTTPConnectionParams,
)
from app.tools.mcp_tool.mcp_toolset import MCPToolset
from tests.conftest import fresh_sqlite_url
from tests.problems import assert_problem

SAMPLES = {
    # contributing/samples/mcp_stdio_server_agent
    "stdio_sample": """
import os

from app.agents.llm_agent import LlmAgent
from app.tools.mcp_tool.mcp_toolset import MCPToolset, StdioServerParameters

_allowed_path = os.path.dirname(os.path.abspath(__file__))

root_agent = LlmAgent(
    model="gemini-2.0-flash",
    name="enterprise_assistant",
    instruction="Help user accessing their file systems",
    tools=[
        MCPToolset(
            connection_params=StdioServerParameters(
                command="npx",
                args=["-y", "@modelcontextprotocol/server-filesystem", _allowed_path],
            ),
            tool_filter=["read_file", "list_directory"],
        )
    ],
)
""",
    # contributing/samples/mcp_streamablehttp_agent
    "streamable_http_sample": """
from app.agents.llm_agent import LlmAgent
from app.tools.mcp_tool.mcp_session_manager import StreamableHTTPServerParams
from app.tools.mcp_tool.mcp_toolset import MCPToolset

root_agent = LlmAgent(
    model="gemini-2.0-flash",
    name="streamable_assistant",
    instruction="Help the user with the server's tools",
    tools=[
        MCPToolset(
            connection_params=StreamableHTTPServerParams(url="http://localhost:3000/mcp"),
            tool_filter=["read_file"],
        )
    ],
)
""",
    # contributing/samples/hello_world_litellm_add_function_to_prompt
    "litellm_sample": '''
import random

from app import Agent
from app.models.lite_llm import LiteLlm


def roll_die(sides: int) -> int:
    """Roll a die and return the rolled result."""
    return random.randint(1, sides)


root_agent = Agent(
    model=LiteLlm(model="vertex_ai/meta/llama-4-maverick-17b-128e-instruct-maas"),
    name="data_processing_agent",
    instruction="You roll dice for the user.",
    tools=[roll_die],
)
''',
}


def _write_samples(agents: Path) -> Path:
    for name, source in SAMPLES.items():
        (agents / name).mkdir(parents=True)
        (agents / name / "__init__.py").write_text("from . import agent\n")
        (agents / name / "agent.py").write_text(source)
    return agents


@pytest.fixture
def agents_dir(tmp_path: Path) -> Path:
    """An agents folder of the three sample shapes."""
    return _write_samples(tmp_path / "agents")


@pytest.fixture
def http(agents_dir: Path, tmp_path: Path, sqlite_template: Path) -> Iterator[TestClient]:
    """A client of an app serving the samples on a migrated SQLite database."""
    settings = Settings(
        database_url=fresh_sqlite_url(sqlite_template, tmp_path),
        data_dir=tmp_path / "data",
        agents_dir=agents_dir,
    )
    with TestClient(create_app(settings)) as client:
        yield client


def _toolset(registry: AppRegistry, app_name: str) -> MCPToolset:
    root = registry.load(app_name).root_agent
    assert isinstance(root, LlmAgent)
    (toolset,) = root.tools
    assert isinstance(toolset, MCPToolset)
    return toolset


def test_adk_samples_naming_mcp_params_and_an_unserved_litellm_load(agents_dir: Path) -> None:
    registry = AppRegistry(agents_dir)
    stdio, streamable = (
        _toolset(registry, name) for name in ("stdio_sample", "streamable_http_sample")
    )
    assert stdio.tool_filter == ["read_file", "list_directory"]
    # No server is started or reached at load: the toolsets connect when first used.
    assert isinstance(streamable.connection_params, StreamableHTTPConnectionParams)
    assert registry.load("litellm_sample").root_agent.name == "data_processing_agent"


def test_bare_stdio_server_parameters_become_adks_connection_params(agents_dir: Path) -> None:
    params = _toolset(
        AppRegistry(agents_dir), "stdio_sample"
    )._manager._params  # what the session manager will connect with
    assert isinstance(params, StdioConnectionParams)
    assert (params.server_params.command, params.timeout) == ("npx", 5.0)


def test_the_samples_are_listed_by_their_root_agents(http: TestClient) -> None:
    listed = http.get("/list-apps", params={"detailed": "true"})
    assert listed.status_code == 200, listed.text
    assert {a["name"]: a["rootAgentName"] for a in listed.json()["apps"]} == {
        "litellm_sample": "data_processing_agent",
        "stdio_sample": "enterprise_assistant",
        "streamable_http_sample": "streamable_assistant",
    }


def test_an_unserved_litellm_fails_its_first_model_call_with_a_typed_problem(
    http: TestClient,
) -> None:
    sessions = "/apps/litellm_sample/users/u/sessions"
    assert http.post(sessions, json={"sessionId": "s"}).status_code == 201
    answer = http.post(
        "/run",
        json={
            "appName": "litellm_sample",
            "userId": "u",
            "sessionId": "s",
            "newMessage": {"role": "user", "parts": [{"text": "roll a d6"}]},
        },
    )
    assert_problem(answer, 501, "model-not-served")
    assert answer.json()["model"] == "vertex_ai/meta/llama-4-maverick-17b-128e-instruct-maas"
    events = http.get(f"{sessions}/s").json()["events"]
    assert [e["author"] for e in events] == ["user", "data_processing_agent"]
    assert events[-1]["errorCode"] == "model-not-served"
