"""The Runner continuing an invocation without a new message, and run-level custom metadata."""

from typing import Any

import pytest

from app.agents import LlmAgent
from app.contexts.callback import CallbackContext
from app.contexts.invocation import RunConfig
from app.errors import InvocationFailed
from app.invocations.runner import InMemoryRunner
from app.models.llm import LlmRequest, LlmResponse
from app.models.scripted import Rule, ScriptedLlm
from app.sessions.models import Event
from tests.engine.helpers import run_turn, texts, user_message


async def lookup() -> str:
    """Fails, as a tool whose service is down."""
    raise RuntimeError("service down")


async def _runner(seen: list[Any]) -> InMemoryRunner:
    def before_model(
        callback_context: CallbackContext, llm_request: LlmRequest
    ) -> LlmResponse | None:
        seen.append((callback_context.user_content, list(llm_request.contents)))
        return None

    agent = LlmAgent(
        name="agent",
        model=ScriptedLlm(
            rules=[
                Rule(when_user="^look$", call=("lookup", {})),
                Rule(when_tool="lookup", say="lookup: {result}"),
                Rule(when_user=".", say="you said: {text}"),
            ]
        ),
        tools=[lookup],
        before_model_callback=before_model,
    )
    runner = InMemoryRunner(agent, app_name="app")
    await runner.session_service.create_session(app_name="app", user_id="u", session_id="s")
    return runner


async def _history(runner: InMemoryRunner) -> list[Event]:
    session = await runner.session_service.get_session(app_name="app", user_id="u", session_id="s")
    assert session is not None
    return list(session.events)


async def test_a_run_without_new_message_continues_the_invocation_from_the_history() -> None:
    seen: list[Any] = []
    runner = await _runner(seen)
    with pytest.raises(InvocationFailed):
        await run_turn(runner, "look")
    (iid,) = {e.invocation_id for e in await _history(runner)}
    seen.clear()

    events = [e async for e in runner.run_async(user_id="u", session_id="s", invocation_id=iid)]

    assert all(e.author == "agent" and e.invocation_id == iid for e in events)
    error = {"error": {"type": "RuntimeError", "detail": "service down"}}
    assert texts(events) == [f"lookup: {error}"]  # the model answers what it sees last
    user_content, contents = seen[0]
    assert user_content == user_message("look")  # the invocation's first user message
    # The model saw the whole history: the message, the failed call and its error answer (the
    # error event has no content).
    assert [c.role for c in contents] == ["user", "model", "user"]
    response = contents[-1].parts[0].function_response
    assert response is not None
    assert response.response == error
    assert [e.author for e in await _history(runner)].count("user") == 1


async def test_a_resumed_run_with_a_message_stores_it_under_the_invocation() -> None:
    seen: list[Any] = []
    runner = await _runner(seen)
    with pytest.raises(InvocationFailed):
        await run_turn(runner, "look")
    (iid,) = {e.invocation_id for e in await _history(runner)}

    events = await run_turn(
        runner, "hello", invocation_id=iid, run_config=RunConfig(custom_metadata={"k": [1]})
    )

    assert events[0].author == "user"
    assert events[0].custom_metadata == {"k": [1]}
    assert {e.invocation_id for e in events} == {iid}
    assert texts(events) == ["hello", "you said: hello"]
    assert seen[-1][0] == user_message("hello")
    assert all(e.custom_metadata is None for e in events[1:])


async def test_run_config_custom_metadata_is_kept_on_the_user_event() -> None:
    runner = await _runner([])

    events = await run_turn(runner, "hi", run_config=RunConfig(custom_metadata={"a": {"b": 1}}))

    stored = await _history(runner)
    assert stored[0].custom_metadata == {"a": {"b": 1}}
    assert events[0].custom_metadata == {"a": {"b": 1}}
    assert all(e.custom_metadata is None for e in stored[1:])


@pytest.mark.parametrize(
    "arguments",
    [{}, {"invocation_id": "e-1", "state_delta": {"k": 1}}],
    ids=["no invocation", "a delta with no message"],
)
async def test_a_run_without_new_message_needs_an_invocation_and_no_delta(
    arguments: dict[str, Any],
) -> None:
    runner = await _runner([])

    with pytest.raises(ValueError, match="new_message"):
        async for _ in runner.run_async(user_id="u", session_id="s", **arguments):
            pass

    assert await _history(runner) == []
