"""Issue 16, acceptance 1: every authoring name imports from its ADK path with `google.adk`
renamed to `app`, and an LlmAgent takes every ADK field listed in the issue."""

import importlib
from types import ModuleType

import pytest
from google.genai import types
from pydantic import BaseModel

PATHS: list[tuple[str, str]] = [
    # agents
    *(
        ("app.agents", n)
        for n in (
            "Agent",
            "LlmAgent",
            "BaseAgent",
            "SequentialAgent",
            "ParallelAgent",
            "LoopAgent",
            "InvocationContext",
            "Context",
            "RunConfig",
            "CallbackContext",
            "ReadonlyContext",
        )
    ),
    ("app.agents.callback_context", "CallbackContext"),
    ("app.agents.readonly_context", "ReadonlyContext"),
    ("app.agents.invocation_context", "InvocationContext"),
    ("app.agents.run_config", "RunConfig"),
    ("app.agents.llm_agent", "LlmAgent"),
    ("app.agents.sequential_agent", "SequentialAgent"),
    ("app.agents.parallel_agent", "ParallelAgent"),
    ("app.agents.loop_agent", "LoopAgent"),
    ("app.agents.base_agent", "BaseAgent"),
    # apps, events
    ("app.apps", "App"),
    ("app.apps", "ResumabilityConfig"),
    ("app.events", "Event"),
    ("app.events", "EventActions"),
    # models
    *(
        ("app.models", n)
        for n in (
            "BaseLlm",
            "LlmRequest",
            "LlmResponse",
            "Gemini",
            "LLMRegistry",
            "LlmCapabilities",
        )
    ),
    ("app.models.llm_request", "LlmRequest"),
    ("app.models.llm_response", "LlmResponse"),
    ("app.models.base_llm", "BaseLlm"),
    ("app.models.google_llm", "Gemini"),
    # models beyond Gemini (issue 17)
    *(("app.models", n) for n in ("OpenAILlm", "Claude", "LiteLlm", "FallbackModel")),
    ("app.models.openai_llm", "OpenAILlm"),
    ("app.models.anthropic_llm", "Claude"),
    ("app.models.lite_llm", "LiteLlm"),
    ("app.models.fallback", "FallbackModel"),
    # tools
    *(
        ("app.tools", n)
        for n in (
            "FunctionTool",
            "LongRunningFunctionTool",
            "AgentTool",
            "BaseTool",
            "ToolContext",
            "ExampleTool",
            "load_artifacts",
            "load_memory",
            "preload_memory",
            "exit_loop",
            "transfer_to_agent",
            "get_user_choice",
            "google_search",
        )
    ),
    ("app.tools.tool_context", "ToolContext"),
    ("app.tools.base_tool", "BaseTool"),
    ("app.tools.function_tool", "FunctionTool"),
    ("app.tools.agent_tool", "AgentTool"),
    ("app.tools.long_running_tool", "LongRunningFunctionTool"),
    ("app.tools.load_memory_tool", "load_memory_tool"),
    ("app.tools.preload_memory_tool", "preload_memory_tool"),
    ("app.tools.load_artifacts_tool", "load_artifacts_tool"),
    ("app.tools.exit_loop_tool", "exit_loop"),
    ("app.tools.transfer_to_agent_tool", "transfer_to_agent"),
    ("app.tools.google_search_tool", "google_search"),
    ("app.tools.example_tool", "ExampleTool"),
    # plugins
    *(
        ("app.plugins", n)
        for n in ("BasePlugin", "PluginManager", "LoggingPlugin", "ReflectAndRetryToolPlugin")
    ),
    # sessions, artifacts, memory, runners
    *(
        ("app.sessions", n)
        for n in (
            "BaseSessionService",
            "InMemorySessionService",
            "DatabaseSessionService",
            "Session",
            "State",
        )
    ),
    ("app.artifacts", "BaseArtifactService"),
    ("app.artifacts", "InMemoryArtifactService"),
    ("app.memory", "BaseMemoryService"),
    ("app.memory", "InMemoryMemoryService"),
    ("app.runners", "Runner"),
    ("app.runners", "InMemoryRunner"),
    ("app", "Agent"),
    ("app", "Runner"),
    # planners, examples, code executors
    ("app.planners", "BasePlanner"),
    ("app.planners", "BuiltInPlanner"),
    ("app.planners", "PlanReActPlanner"),
    ("app.planners.built_in_planner", "BuiltInPlanner"),
    ("app.planners.plan_re_act_planner", "PlanReActPlanner"),
    ("app.planners.base_planner", "BasePlanner"),
    ("app.examples", "Example"),
    ("app.examples", "BaseExampleProvider"),
    ("app.examples.example", "Example"),
    ("app.code_executors", "BaseCodeExecutor"),
    ("app.code_executors", "BuiltInCodeExecutor"),
    ("app.code_executors", "UnsafeLocalCodeExecutor"),
    ("app.code_executors.built_in_code_executor", "BuiltInCodeExecutor"),
    ("app.code_executors.unsafe_local_code_executor", "UnsafeLocalCodeExecutor"),
]


@pytest.mark.parametrize(("module", "name"), PATHS, ids=[f"{m}.{n}" for m, n in PATHS])
def test_name_imports_from_its_adk_path(module: str, name: str) -> None:
    value = getattr(importlib.import_module(module), name)
    assert value is not None
    # A package export and the module-level definition are one object.
    package = module.rsplit(".", 1)[0] if module.count(".") > 1 else None
    exported = getattr(importlib.import_module(package), name, None) if package else None
    if exported is not None and not isinstance(exported, ModuleType):
        assert exported is value


class Reply(BaseModel):
    """An answer."""

    text: str


class Query(BaseModel):
    """A question."""

    question: str


def test_an_llm_agent_takes_every_adk_field() -> None:
    from app.agents import LlmAgent
    from app.code_executors import BuiltInCodeExecutor
    from app.planners import BuiltInPlanner

    def note(**_: object) -> None:
        return None

    sub = LlmAgent(name="helper", model="scripted")
    agent = LlmAgent(
        name="full",
        model="gemini-2.5-flash",
        description="Has every field.",
        instruction="Answer {topic?}.",
        global_instruction="Be kind.",
        static_instruction=types.Content(parts=[types.Part(text="Static.")]),
        tools=[],
        generate_content_config=types.GenerateContentConfig(temperature=0.1),
        include_contents="none",
        output_schema=Reply,
        input_schema=Query,
        output_key="reply",
        planner=BuiltInPlanner(thinking_config=types.ThinkingConfig(thinking_budget=128)),
        code_executor=BuiltInCodeExecutor(),
        disallow_transfer_to_parent=True,
        disallow_transfer_to_peers=True,
        sub_agents=[sub],
        before_agent_callback=[note, note],
        after_agent_callback=[note],
        before_model_callback=[note],
        after_model_callback=[note, note],
        on_model_error_callback=note,
        before_tool_callback=[note],
        after_tool_callback=[note],
        on_tool_error_callback=[note],
    )
    assert agent.output_schema is Reply
    assert agent.input_schema is Query
    assert agent.include_contents == "none"
    assert isinstance(agent.planner, BuiltInPlanner)
    assert isinstance(agent.code_executor, BuiltInCodeExecutor)
    assert sub.parent_agent is agent
