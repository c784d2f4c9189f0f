"""Artifacts saved during an invocation: visible to it at once, to others only on commit."""

from typing import Any

import pytest
from google.genai import types

from app.agents import LlmAgent
from app.artifacts.service import ArtifactScope
from app.errors import ArtifactNotFound
from app.invocations.runner import InvocationFailed
from app.tools.base_tool import BaseTool
from app.tools.tool_context import ToolContext
from tests.engine.conftest import Services
from tests.engine.helpers import ScriptModel, calls_response, run_turn, text_response

SCOPE = ArtifactScope("app", "u", "s")


async def test_artifact_saved_in_a_failing_invocation_never_becomes_visible(
    services: Services,
) -> None:
    staged: dict[str, Any] = {}

    async def write_report(tool_context: ToolContext) -> str:
        """Saves a report."""
        staged["version"] = await tool_context.save_artifact("report.txt", types.Part(text="draft"))
        return "saved"

    def explode(**_: Any) -> None:
        raise RuntimeError("after_tool failed")

    agent = LlmAgent(
        name="agent",
        model=ScriptModel(replies=[calls_response(("write_report", {})), text_response("done")]),
        tools=[write_report],
        after_tool_callback=explode,
    )
    await services.sessions.create_session(app_name="app", user_id="u", session_id="s")
    with pytest.raises(InvocationFailed):
        await run_turn(services.runner(agent), "write it")

    assert staged["version"] == 0
    with pytest.raises(ArtifactNotFound):
        await services.artifacts.get(SCOPE, filename="report.txt")
    assert await services.artifacts.list_names(SCOPE) == []
    stored = await services.sessions.get_session(app_name="app", user_id="u", session_id="s")
    assert stored is not None
    # The user message, the model's call, the call answered with the error (not with the
    # tool's result: that step failed), then the typed error event.
    assert [(e.author, bool(e.get_function_responses()), e.error_code) for e in stored.events] == [
        ("user", False, None),
        ("agent", False, None),
        ("agent", True, None),
        ("agent", False, "RuntimeError"),
    ]
    (answer,) = stored.events[2].get_function_responses()
    assert answer.name == "write_report"
    assert answer.id == stored.events[1].get_function_calls()[0].id
    assert answer.response == {"error": {"type": "RuntimeError", "detail": "after_tool failed"}}
    assert all(not e.actions.artifact_delta for e in stored.events)


async def test_artifact_saved_by_a_tool_commits_with_its_event_at_the_version_it_saw(
    services: Services,
) -> None:
    seen: dict[str, Any] = {}

    async def write_report(tool_context: ToolContext) -> str:
        """Saves a report and checks who can see it before the event commits."""
        version = await tool_context.save_artifact("report.txt", types.Part(text="final"))
        seen["version"] = version
        loaded = await tool_context.load_artifact("report.txt")
        seen["self_load"] = loaded
        seen["listed"] = await tool_context.list_artifacts()
        try:
            await services.artifacts.get(SCOPE, filename="report.txt")
            seen["others_see_it"] = True
        except ArtifactNotFound:
            seen["others_see_it"] = False
        return "saved"

    async def reread(
        tool: BaseTool, args: dict[str, Any], tool_context: ToolContext, tool_response: Any
    ) -> None:
        del tool, args, tool_response
        part = await tool_context.load_artifact("report.txt", version=seen["version"])
        seen["after_tool_load"] = part

    agent = LlmAgent(
        name="agent",
        model=ScriptModel(replies=[calls_response(("write_report", {})), text_response("done")]),
        tools=[write_report],
        after_tool_callback=reread,
    )
    await services.sessions.create_session(app_name="app", user_id="u", session_id="s")
    # An earlier version, so the tool's save is version 1.
    staged = await services.artifacts.stage_part(
        SCOPE, filename="report.txt", artifact=types.Part(text="v0")
    )
    await services.artifacts.save(services.sessions, SCOPE, staged)

    events = await run_turn(services.runner(agent), "write it")
    assert seen == {
        "version": 1,
        "self_load": types.Part(text="final"),  # a text Part reads back as text (ADK)
        "listed": ["report.txt"],
        "others_see_it": True,  # version 0 (committed earlier) is visible ...
        "after_tool_load": types.Part(text="final"),
    }
    (response_event,) = [e for e in events if e.get_function_responses()]
    assert response_event.actions.artifact_delta == {"report.txt": 1}
    latest = await services.artifacts.get(SCOPE, filename="report.txt")
    assert latest.metadata.version == 1
    assert await services.artifacts.read_bytes(latest.blob_key) == b"final"


async def test_uncommitted_version_is_invisible_to_other_readers(services: Services) -> None:
    seen: dict[str, Any] = {}

    async def write_report(tool_context: ToolContext) -> str:
        """Saves a first report; nobody else can see it until the event commits."""
        await tool_context.save_artifact("fresh.txt", types.Part(text="new"))
        try:
            await services.artifacts.get(SCOPE, filename="fresh.txt")
            seen["visible_before_commit"] = True
        except ArtifactNotFound:
            seen["visible_before_commit"] = False
        return "saved"

    agent = LlmAgent(
        name="agent",
        model=ScriptModel(replies=[calls_response(("write_report", {})), text_response("done")]),
        tools=[write_report],
    )
    await services.sessions.create_session(app_name="app", user_id="u", session_id="s")
    await run_turn(services.runner(agent), "write it")
    assert seen == {"visible_before_commit": False}
    assert (await services.artifacts.get(SCOPE, filename="fresh.txt")).metadata.version == 0
