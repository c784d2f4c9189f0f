"""Small ADK shapes of the Runner and its services that ADK documentation code relies on."""

import pytest
from google.genai import types

from app.agents import LlmAgent
from app.agents.readonly_context import ReadonlyContext
from app.artifacts import InMemoryArtifactService
from app.errors import MissingStateKey
from app.runners import Runner
from app.sessions import DatabaseSessionService, InMemorySessionService
from app.utils.instructions_utils import inject_session_state
from tests.engine.conftest import Services
from tests.engine.helpers import ScriptModel, run_turn, text_response, user_message


async def test_run_async_yields_agent_events_only_and_run_invocation_the_user_event_too() -> None:
    sessions = InMemorySessionService()
    model = ScriptModel(replies=[text_response("hello")])
    runner = Runner(app_name="app", agent=LlmAgent(name="a", model=model), session_service=sessions)
    await sessions.create_session(app_name="app", user_id="u", session_id="s")

    adk = [
        e
        async for e in runner.run_async(user_id="u", session_id="s", new_message=user_message("hi"))
    ]
    ours = await run_turn(runner, "again")

    assert [e.author for e in adk] == ["a"]
    assert [e.author for e in ours] == ["user", "a"]
    stored = await sessions.get_session(app_name="app", user_id="u", session_id="s")
    assert stored is not None
    assert [e.author for e in stored.events] == ["user", "a", "user", "a"]
    assert [
        e.author for e in runner.run(user_id="u", session_id="s", new_message=user_message("x"))
    ] == ["a"]


async def test_an_in_memory_artifact_service_built_without_arguments_is_bound_by_the_runner() -> (
    None
):
    artifacts = InMemoryArtifactService()
    with pytest.raises(ValueError, match="needs the InMemorySessionService"):
        await artifacts.list_artifact_keys(app_name="app", user_id="u", session_id="s")
    sessions = InMemorySessionService()
    Runner(
        app_name="app",
        agent=LlmAgent(name="a", model="scripted"),
        session_service=sessions,
        artifact_service=artifacts,
    )
    await sessions.create_session(app_name="app", user_id="u", session_id="s")

    version = await artifacts.save_artifact(
        app_name="app", user_id="u", session_id="s", filename="a.txt", artifact=types.Part(text="x")
    )

    assert version == 0
    assert await artifacts.list_artifact_keys(app_name="app", user_id="u", session_id="s") == [
        "a.txt"
    ]


def test_an_in_memory_artifact_service_refuses_a_database_session_service(
    services: Services,
) -> None:
    artifacts = InMemoryArtifactService()
    assert isinstance(services.sessions, DatabaseSessionService)
    with pytest.raises(TypeError, match="use DatabaseArtifactService"):
        artifacts.bind_session_service(services.sessions)


async def test_inject_session_state_fills_state_and_artifacts() -> None:
    sessions = InMemorySessionService()
    artifacts = InMemoryArtifactService(session_service=sessions)
    seen: list[str] = []

    async def provider(context: ReadonlyContext) -> str:
        seen.append(
            await inject_session_state(
                "Hi {name}, {user:tier?}; notes: {artifact.notes.txt}; "
                '{artifact.none?}| {"json": 1}',
                context,
            )
        )
        with pytest.raises(MissingStateKey, match=r"Artifact missing\.txt not found"):
            await inject_session_state("{artifact.missing.txt}", context)
        return "ok"

    model = ScriptModel(replies=[text_response("done")])
    runner = Runner(
        app_name="app",
        agent=LlmAgent(name="a", model=model, instruction=provider),
        session_service=sessions,
        artifact_service=artifacts,
    )
    await sessions.create_session(
        app_name="app", user_id="u", session_id="s", state={"name": "Ada"}
    )
    await artifacts.save_artifact(
        app_name="app",
        user_id="u",
        session_id="s",
        filename="notes.txt",
        artifact=types.Part(text="buy milk"),
    )

    await run_turn(runner, "hi")

    assert seen == ['Hi Ada, ; notes: buy milk; | {"json": 1}']


async def test_a_string_instruction_may_name_an_artifact() -> None:
    sessions = InMemorySessionService()
    artifacts = InMemoryArtifactService(session_service=sessions)
    model = ScriptModel(replies=[text_response("done")])
    runner = Runner(
        app_name="app",
        agent=LlmAgent(name="a", model=model, instruction="Policy: {artifact.policy.md}"),
        session_service=sessions,
        artifact_service=artifacts,
    )
    await sessions.create_session(app_name="app", user_id="u", session_id="s")
    await artifacts.save_artifact(
        app_name="app",
        user_id="u",
        session_id="s",
        filename="policy.md",
        artifact=types.Part.from_bytes(data=b"be nice", mime_type="text/markdown"),
    )

    await run_turn(runner, "hi")

    assert model.requests[0].system_instruction_text() == "Policy: be nice"
