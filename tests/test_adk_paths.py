"""ADK agent code imports under `app` with `google.adk` renamed: every path names agentd's class."""

import importlib
import subprocess
import sys

import pytest
from mcp import StdioServerParameters

from app.agents import config_agent_utils
from app.agents.base_agent import BaseAgent
from app.agents.base_agent_config import BaseAgentConfig
from app.agents.common_configs import AgentRefConfig, ArgumentConfig, CodeConfig
from app.agents.llm_agent import Agent, LlmAgent
from app.agents.llm_agent_config import LlmAgentConfig
from app.agents.workflow import LoopAgent, ParallelAgent, SequentialAgent
from app.artifacts.base import BaseArtifactService
from app.artifacts.file import FileArtifactService
from app.artifacts.in_memory import InMemoryArtifactService
from app.contexts.callback import CallbackContext
from app.contexts.invocation import InvocationContext, RunConfig
from app.contexts.readonly import ReadonlyContext
from app.contexts.tool import ToolContext
from app.invocations.app_config import EventsCompactionConfig
from app.invocations.runner import App, InMemoryRunner, ResumabilityConfig, Runner
from app.invocations.summarizer import BaseEventsSummarizer, LlmEventSummarizer
from app.memory.base import BaseMemoryService, SearchMemoryResponse
from app.memory.in_memory import InMemoryMemoryService
from app.models.gemini import Gemini
from app.models.llm import BaseLlm, LlmRequest, LlmResponse
from app.models.registry import LLMRegistry
from app.sessions.base import BaseSessionService, GetSessionConfig
from app.sessions.database import DatabaseSessionService
from app.sessions.in_memory import InMemorySessionService
from app.sessions.models import Event, EventActions, EventCompaction, Session
from app.sessions.state import State
from app.tools.base_toolset import BaseToolset, ToolPredicate
from app.tools.mcp_tool.mcp_session_manager import (
    MCPSessionManager,
    SseConnectionParams,
    StdioConnectionParams,
    StreamableHTTPConnectionParams,
)
from app.tools.mcp_tool.mcp_tool import MCPTool
from app.tools.mcp_tool.mcp_toolset import MCPToolset
from app.tools.openapi_tool import OpenAPIToolset, RestApiTool
from app.tools.openapi_tool.auth import auth_helpers
from app.tools.tool_configs import BaseToolConfig, ToolArgsConfig, ToolConfig
from tests.engine.helpers import run_turn, texts

ADK_PATHS: list[tuple[str, str, object]] = [
    ("app", "Agent", Agent),
    ("app", "Runner", Runner),
    ("app.agents", "Agent", Agent),
    ("app.agents", "LlmAgent", LlmAgent),
    ("app.agents", "BaseAgent", BaseAgent),
    ("app.agents", "SequentialAgent", SequentialAgent),
    ("app.agents", "ParallelAgent", ParallelAgent),
    ("app.agents", "LoopAgent", LoopAgent),
    ("app.agents", "InvocationContext", InvocationContext),
    ("app.agents", "RunConfig", RunConfig),
    ("app.agents", "Context", ToolContext),
    ("app.agents", "CallbackContext", CallbackContext),
    ("app.agents", "ReadonlyContext", ReadonlyContext),
    ("app.agents.llm_agent", "Agent", Agent),
    ("app.agents.llm_agent", "LlmAgent", LlmAgent),
    ("app.agents.base_agent", "BaseAgent", BaseAgent),
    ("app.agents.sequential_agent", "SequentialAgent", SequentialAgent),
    ("app.agents.parallel_agent", "ParallelAgent", ParallelAgent),
    ("app.agents.loop_agent", "LoopAgent", LoopAgent),
    ("app.agents.callback_context", "CallbackContext", CallbackContext),
    ("app.agents.readonly_context", "ReadonlyContext", ReadonlyContext),
    ("app.agents.invocation_context", "InvocationContext", InvocationContext),
    ("app.agents.run_config", "RunConfig", RunConfig),
    ("app.apps", "App", App),
    ("app.apps", "ResumabilityConfig", ResumabilityConfig),
    ("app.apps", "EventsCompactionConfig", EventsCompactionConfig),
    ("app.apps.base_events_summarizer", "BaseEventsSummarizer", BaseEventsSummarizer),
    ("app.apps.llm_event_summarizer", "LlmEventSummarizer", LlmEventSummarizer),
    ("app.events", "Event", Event),
    ("app.events", "EventActions", EventActions),
    ("app.events.event", "Event", Event),
    ("app.events.event_actions", "EventActions", EventActions),
    ("app.events.event_actions", "EventCompaction", EventCompaction),
    ("app.apps.app", "App", App),
    ("app.apps.app", "ResumabilityConfig", ResumabilityConfig),
    ("app.apps.app", "EventsCompactionConfig", EventsCompactionConfig),
    ("app.runners", "Runner", Runner),
    ("app.runners", "InMemoryRunner", InMemoryRunner),
    ("app.models", "BaseLlm", BaseLlm),
    ("app.models", "LlmRequest", LlmRequest),
    ("app.models", "LlmResponse", LlmResponse),
    ("app.models", "Gemini", Gemini),
    ("app.models", "LLMRegistry", LLMRegistry),
    ("app.models.llm_request", "LlmRequest", LlmRequest),
    ("app.models.llm_response", "LlmResponse", LlmResponse),
    ("app.models.base_llm", "BaseLlm", BaseLlm),
    ("app.models.google_llm", "Gemini", Gemini),
    ("app.sessions", "BaseSessionService", BaseSessionService),
    ("app.sessions", "InMemorySessionService", InMemorySessionService),
    ("app.sessions", "DatabaseSessionService", DatabaseSessionService),
    ("app.sessions", "Session", Session),
    ("app.sessions", "State", State),
    ("app.sessions.session", "Session", Session),
    ("app.sessions.state", "State", State),
    ("app.sessions.base_session_service", "BaseSessionService", BaseSessionService),
    ("app.sessions.base_session_service", "GetSessionConfig", GetSessionConfig),
    ("app.sessions.in_memory_session_service", "InMemorySessionService", InMemorySessionService),
    ("app.sessions.database_session_service", "DatabaseSessionService", DatabaseSessionService),
    ("app.artifacts", "BaseArtifactService", BaseArtifactService),
    ("app.artifacts", "InMemoryArtifactService", InMemoryArtifactService),
    ("app.artifacts.base_artifact_service", "BaseArtifactService", BaseArtifactService),
    (
        "app.artifacts.in_memory_artifact_service",
        "InMemoryArtifactService",
        InMemoryArtifactService,
    ),
    ("app.artifacts", "FileArtifactService", FileArtifactService),
    ("app.artifacts.file_artifact_service", "FileArtifactService", FileArtifactService),
    ("app.agents.config_agent_utils", "from_config", config_agent_utils.from_config),
    ("app.agents.llm_agent_config", "LlmAgentConfig", LlmAgentConfig),
    ("app.agents.base_agent_config", "BaseAgentConfig", BaseAgentConfig),
    ("app.agents.common_configs", "AgentRefConfig", AgentRefConfig),
    ("app.agents.common_configs", "ArgumentConfig", ArgumentConfig),
    ("app.agents.common_configs", "CodeConfig", CodeConfig),
    ("app.tools.tool_configs", "ToolConfig", ToolConfig),
    ("app.tools.tool_configs", "ToolArgsConfig", ToolArgsConfig),
    ("app.tools.tool_configs", "BaseToolConfig", BaseToolConfig),
    ("app.tools.base_toolset", "BaseToolset", BaseToolset),
    ("app.tools.base_toolset", "ToolPredicate", ToolPredicate),
    ("app.tools", "BaseToolset", BaseToolset),
    ("app.tools.mcp_tool", "MCPToolset", MCPToolset),
    ("app.tools.mcp_tool", "McpToolset", MCPToolset),
    ("app.tools.mcp_tool", "StdioConnectionParams", StdioConnectionParams),
    ("app.tools.mcp_tool", "SseConnectionParams", SseConnectionParams),
    ("app.tools.mcp_tool", "StreamableHTTPConnectionParams", StreamableHTTPConnectionParams),
    ("app.tools.mcp_tool.mcp_toolset", "MCPToolset", MCPToolset),
    ("app.tools.mcp_tool.mcp_toolset", "McpToolset", MCPToolset),
    ("app.tools.mcp_tool.mcp_toolset", "StdioServerParameters", StdioServerParameters),
    ("app.tools.mcp_tool.mcp_toolset", "StdioConnectionParams", StdioConnectionParams),
    ("app.tools.mcp_tool.mcp_toolset", "SseConnectionParams", SseConnectionParams),
    (
        "app.tools.mcp_tool.mcp_toolset",
        "StreamableHTTPConnectionParams",
        StreamableHTTPConnectionParams,
    ),
    ("app.tools.mcp_tool.mcp_tool", "MCPTool", MCPTool),
    ("app.tools.mcp_tool.mcp_session_manager", "MCPSessionManager", MCPSessionManager),
    ("app.tools.mcp_tool.mcp_session_manager", "StdioConnectionParams", StdioConnectionParams),
    ("app.tools.mcp_tool.mcp_session_manager", "SseConnectionParams", SseConnectionParams),
    (
        "app.tools.mcp_tool.mcp_session_manager",
        "StreamableHTTPConnectionParams",
        StreamableHTTPConnectionParams,
    ),
    ("app.tools.mcp_tool.mcp_session_manager", "SseServerParams", SseConnectionParams),
    (
        "app.tools.mcp_tool.mcp_session_manager",
        "StreamableHTTPServerParams",
        StreamableHTTPConnectionParams,
    ),
    ("app.memory", "BaseMemoryService", BaseMemoryService),
    ("app.memory", "InMemoryMemoryService", InMemoryMemoryService),
    ("app.memory.base_memory_service", "BaseMemoryService", BaseMemoryService),
    ("app.memory.base_memory_service", "SearchMemoryResponse", SearchMemoryResponse),
    ("app.memory.in_memory_memory_service", "InMemoryMemoryService", InMemoryMemoryService),
    ("app.tools.openapi_tool", "OpenAPIToolset", OpenAPIToolset),
    ("app.tools.openapi_tool", "RestApiTool", RestApiTool),
    ("app.tools.openapi_tool.openapi_spec_parser", "OpenAPIToolset", OpenAPIToolset),
    ("app.tools.openapi_tool.openapi_spec_parser", "RestApiTool", RestApiTool),
    (
        "app.tools.openapi_tool.openapi_spec_parser.openapi_toolset",
        "OpenAPIToolset",
        OpenAPIToolset,
    ),
    ("app.tools.openapi_tool.openapi_spec_parser.rest_api_tool", "RestApiTool", RestApiTool),
    (
        "app.tools.openapi_tool.auth.auth_helpers",
        "token_to_scheme_credential",
        auth_helpers.token_to_scheme_credential,
    ),
]


@pytest.mark.parametrize(
    ("module", "name", "expected"), ADK_PATHS, ids=[f"{m}.{n}" for m, n, _ in ADK_PATHS]
)
def test_adk_path_names_agentds_own_class(module: str, name: str, expected: object) -> None:
    assert getattr(importlib.import_module(module), name) is expected


def test_importing_app_loads_neither_agents_nor_runner() -> None:
    # A fresh interpreter: this one has imported everything already.
    code = "import sys, app; print(sorted(m for m in sys.modules if m.startswith('app.')))"
    out = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True
    ).stdout
    assert out.strip() == "[]"


def test_unknown_top_level_name_is_an_attribute_error() -> None:
    import app

    with pytest.raises(AttributeError, match="NoSuchThing"):
        _ = app.NoSuchThing


def test_app_accepts_adks_resumability_config() -> None:
    from app.apps import App, ResumabilityConfig

    agent = LlmAgent(name="solo", model="scripted")
    config = ResumabilityConfig(is_resumable=True)
    assert App(name="a", root_agent=agent, resumability_config=config).resumability_config == config
    assert ResumabilityConfig().is_resumable is False


async def test_adk_style_pipeline_runs_with_only_its_imports_renamed() -> None:
    from app import Agent
    from app.agents.sequential_agent import SequentialAgent
    from app.runners import InMemoryRunner

    draft = Agent(
        name="draft", model="scripted", instruction="Just say 'a draft'", output_key="draft"
    )
    review = Agent(name="review", model="scripted", instruction="Just say 'looks good'")
    pipeline = SequentialAgent(name="pipeline", sub_agents=[draft, review])
    runner = InMemoryRunner(pipeline, app_name="adk_paths")
    await runner.session_service.create_session(app_name="adk_paths", user_id="u", session_id="s")

    events = await run_turn(runner, "write something")

    assert texts(events) == ["write something", "a draft", "looks good"]
    assert [e.author for e in events] == ["user", "draft", "review"]
    stored = await runner.session_service.get_session(
        app_name="adk_paths", user_id="u", session_id="s"
    )
    assert stored is not None
    assert stored.state == {"draft": "a draft"}
