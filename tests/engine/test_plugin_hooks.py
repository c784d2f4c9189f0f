"""ADK 2.13's runner-level plugin hooks, LoggingPlugin and ReflectAndRetryToolPlugin.

Each hook is shown called at its point of the run, and its override (a replaced user message, a
replaced event) or its observe-only rule (the error hooks) holds. Runs use the scripted model on
the in-memory session service.
"""

import logging
from typing import Any

import pytest
from google.genai import types

from app.agents import LlmAgent
from app.errors import InvocationFailed
from app.invocations.runner import Runner
from app.plugins import BasePlugin, LoggingPlugin, PluginManager, ReflectAndRetryToolPlugin
from app.plugins.base_plugin import BasePlugin as BasePluginAtAdkPath
from app.plugins.logging_plugin import LoggingPlugin as LoggingPluginAtAdkPath
from app.plugins.plugin_manager import PluginManager as PluginManagerAtAdkPath
from app.plugins.reflect_retry_tool_plugin import (
    REFLECT_AND_RETRY_RESPONSE_TYPE,
    TrackingScope,
)
from app.plugins.reflect_retry_tool_plugin import (
    ReflectAndRetryToolPlugin as ReflectAtAdkPath,
)
from app.sessions import InMemorySessionService
from app.sessions.models import Event
from tests.engine.helpers import (
    FailingLlm,
    ScriptModel,
    calls_response,
    run_turn,
    text_response,
    texts,
)


def lookup(country: str) -> str:
    """Capital of a country."""
    return {"france": "Paris"}.get(country.lower(), "unknown")


async def make_runner(agent: LlmAgent, plugins: list[BasePlugin]) -> Runner:
    """A runner with an in-memory session "s" for user "u"."""
    sessions = InMemorySessionService()
    await sessions.create_session(app_name="app", user_id="u", session_id="s")
    return Runner(app_name="app", agent=agent, session_service=sessions, plugins=plugins)


async def stored(runner: Runner) -> list[Event]:
    """The session's stored events."""
    session = await runner.session_service.get_session(app_name="app", user_id="u", session_id="s")
    assert session is not None
    return list(session.events)


class Recorder(BasePlugin):
    """Records the runner-level hooks in the order they are called."""

    def __init__(self, name: str = "recorder") -> None:
        super().__init__(name)
        self.calls: list[str] = []
        self.errors: list[Exception] = []

    async def on_user_message_callback(self, **kwargs: Any) -> types.Content | None:
        """Record."""
        del kwargs
        self.calls.append("user_message")
        return None

    async def before_run_callback(self, **kwargs: Any) -> types.Content | None:
        """Record."""
        del kwargs
        self.calls.append("before_run")
        return None

    async def before_agent_callback(self, **kwargs: Any) -> types.Content | None:
        """Record."""
        del kwargs
        self.calls.append("before_agent")
        return None

    async def after_agent_callback(self, **kwargs: Any) -> types.Content | None:
        """Record."""
        del kwargs
        self.calls.append("after_agent")
        return None

    async def on_event_callback(self, *, event: Event, **kwargs: Any) -> Event | None:
        """Record."""
        del kwargs
        self.calls.append(f"event:{event.author}")
        return None

    async def after_run_callback(self, **kwargs: Any) -> None:
        """Record."""
        del kwargs
        self.calls.append("after_run")

    async def on_agent_error_callback(self, *, error: Exception, **kwargs: Any) -> None:
        """Record."""
        del kwargs
        self.calls.append("agent_error")
        self.errors.append(error)

    async def on_run_error_callback(self, *, error: Exception, **kwargs: Any) -> None:
        """Record."""
        del kwargs
        self.calls.append("run_error")
        self.errors.append(error)


def test_plugins_are_at_adks_module_paths() -> None:
    assert BasePluginAtAdkPath is BasePlugin
    assert PluginManagerAtAdkPath is PluginManager
    assert LoggingPluginAtAdkPath is LoggingPlugin
    assert ReflectAtAdkPath is ReflectAndRetryToolPlugin


async def test_runner_hooks_run_at_their_points_in_order() -> None:
    recorder = Recorder()
    agent = LlmAgent(name="capital", model="scripted", instruction="Say 'hi'")
    runner = await make_runner(agent, [recorder])

    await run_turn(runner, "hello")

    assert recorder.calls == [
        "user_message",
        "before_run",
        "before_agent",
        "event:capital",
        "after_agent",
        "after_run",
    ]


async def test_on_user_message_callback_replaces_the_stored_and_sent_message() -> None:
    class Rewrite(BasePlugin):
        async def on_user_message_callback(
            self, *, invocation_context: Any, user_message: types.Content
        ) -> types.Content | None:
            del invocation_context, user_message
            return types.Content(role="user", parts=[types.Part(text="rewritten")])

    model = ScriptModel(replies=[text_response("ok")])
    runner = await make_runner(LlmAgent(name="a", model=model), [Rewrite("rewrite")])

    events = await run_turn(runner, "original")

    assert texts(events)[0] == "rewritten"
    assert texts((await stored(runner))[:1]) == ["rewritten"]
    sent = [p.text for c in model.requests[0].contents for p in c.parts or []]
    assert sent == ["rewritten"]


async def test_on_event_callback_replacement_is_merged_stored_and_yielded() -> None:
    class Stamp(BasePlugin):
        def __init__(self) -> None:
            super().__init__("stamp")
            self.seen_ids: list[str] = []

        async def on_event_callback(self, *, invocation_context: Any, event: Event) -> Event | None:
            del invocation_context
            self.seen_ids.append(event.id)
            # Only the fields set here override; id, invocation id and timestamp never do.
            return Event(
                author="",
                id="forged",
                content=types.Content(role="model", parts=[types.Part(text="stamped")]),
                custom_metadata={"stamped": True},
            )

    stamp = Stamp()
    runner = await make_runner(
        LlmAgent(name="a", model=ScriptModel(replies=[text_response("ok")])), [stamp]
    )

    events = await run_turn(runner, "hello")

    reply = events[-1]
    assert texts([reply]) == ["stamped"]
    assert reply.author == "a"
    assert reply.id == stamp.seen_ids[0]
    assert reply.custom_metadata == {"stamped": True}
    assert reply.invocation_id == events[0].invocation_id
    last = (await stored(runner))[-1]
    assert (last.id, texts([last])) == (reply.id, ["stamped"])


async def test_before_run_callback_content_ends_the_run_without_the_agent() -> None:
    class Gate(BasePlugin):
        async def before_run_callback(self, *, invocation_context: Any) -> types.Content | None:
            del invocation_context
            return types.Content(role="model", parts=[types.Part(text="closed")])

    recorder = Recorder()
    model = ScriptModel(replies=[text_response("ok")])
    runner = await make_runner(LlmAgent(name="a", model=model), [Gate("gate"), recorder])

    events = await run_turn(runner, "hello")

    assert texts(events) == ["hello", "closed"]
    assert model.requests == []
    assert recorder.calls == ["user_message"]


async def test_error_hooks_observe_a_failed_run_and_the_error_still_reaches_the_caller() -> None:
    class Broken(BasePlugin):
        async def on_run_error_callback(self, *, invocation_context: Any, error: Exception) -> None:
            del invocation_context, error
            raise RuntimeError("plugin bug")

    recorder = Recorder()
    runner = await make_runner(LlmAgent(name="a", model=FailingLlm()), [Broken("broken"), recorder])

    with pytest.raises(InvocationFailed) as failed:
        await run_turn(runner, "hello")

    assert str(failed.value.__cause__) == "model unavailable"

    assert recorder.calls == [
        "user_message",
        "before_run",
        "before_agent",
        "agent_error",
        "run_error",
    ]
    assert all(str(e) == "model unavailable" for e in recorder.errors)


async def test_logging_plugin_logs_every_step_through_logging(
    caplog: pytest.LogCaptureFixture,
) -> None:
    agent = LlmAgent(name="capital", model="scripted", tools=[lookup])
    runner = await make_runner(agent, [LoggingPlugin()])

    with caplog.at_level(logging.INFO, logger="app.plugins.logging_plugin"):
        await run_turn(runner, "capital of France?")

    messages = [r.getMessage() for r in caplog.records if r.name == "app.plugins.logging_plugin"]
    for step in (
        "user message",
        "run start",
        "agent start",
        "model request",
        "model response",
        "tool call",
        "tool result",
        "event",
        "agent end",
        "run end",
    ):
        assert any(m.startswith(f"[logging_plugin] {step}:") for m in messages), step
    assert any("Paris" in m for m in messages)


def flaky(failures: list[str]) -> Any:
    """A tool that fails while `failures` has entries, then answers."""

    def check_stock(item: str) -> str:
        """Stock of an item."""
        if failures:
            raise ValueError(failures.pop(0))
        return f"{item}: 3"

    return check_stock


def retrying_model() -> ScriptModel:
    """A model that keeps calling check_stock, then reads the answer after a success."""
    return ScriptModel(replies=[calls_response(("check_stock", {"item": "tea"}))])


def tool_results(events: list[Event]) -> list[dict[str, Any]]:
    """Every function response's payload, in order."""
    return [dict(r.response or {}) for e in events for r in e.get_function_responses() if r.name]


async def test_reflect_and_retry_answers_failures_with_guidance_until_the_tool_succeeds() -> None:
    model = ScriptModel(
        replies=[
            calls_response(("check_stock", {"item": "tea"})),
            calls_response(("check_stock", {"item": "tea"})),
            calls_response(("check_stock", {"item": "tea"})),
            text_response("done"),
        ]
    )
    agent = LlmAgent(name="shop", model=model, tools=[flaky(["db down", "db down"])])
    runner = await make_runner(agent, [ReflectAndRetryToolPlugin(max_retries=3)])

    events = await run_turn(runner, "stock of tea?")

    results = tool_results(events)
    assert [r.get("response_type") for r in results[:2]] == [REFLECT_AND_RETRY_RESPONSE_TYPE] * 2
    assert [r["retry_count"] for r in results[:2]] == [1, 2]
    assert results[0]["error_type"] == "ValueError"
    assert "db down" in results[0]["reflection_guidance"]
    assert results[2] == {"result": "tea: 3"}
    assert texts(events)[-1] == "done"


async def test_reflect_and_retry_raises_the_error_once_the_retries_are_used_up() -> None:
    agent = LlmAgent(name="shop", model=retrying_model(), tools=[flaky(["db down"] * 10)])
    runner = await make_runner(agent, [ReflectAndRetryToolPlugin(max_retries=2)])

    with pytest.raises(InvocationFailed) as failed:
        await run_turn(runner, "stock of tea?")

    assert str(failed.value.__cause__) == "db down"

    answered = tool_results(await stored(runner))
    assert [r.get("retry_count") for r in answered[:2]] == [1, 2]


async def test_reflect_and_retry_tells_the_model_to_give_up_when_asked_not_to_raise() -> None:
    model = ScriptModel(
        replies=[
            calls_response(("check_stock", {"item": "tea"})),
            calls_response(("check_stock", {"item": "tea"})),
            text_response("sorry"),
        ]
    )
    agent = LlmAgent(name="shop", model=model, tools=[flaky(["db down"] * 10)])
    plugin = ReflectAndRetryToolPlugin(
        max_retries=1,
        throw_exception_if_retry_exceeded=False,
        tracking_scope=TrackingScope.GLOBAL,
    )
    runner = await make_runner(agent, [plugin])

    events = await run_turn(runner, "stock of tea?")

    results = tool_results(events)
    assert [r["retry_count"] for r in results] == [1, 1]
    assert "Do not call `check_stock` again" in results[1]["reflection_guidance"]
    assert texts(events)[-1] == "sorry"


def test_reflect_and_retry_refuses_negative_retries() -> None:
    with pytest.raises(ValueError, match="non-negative"):
        ReflectAndRetryToolPlugin(max_retries=-1)


async def test_plugin_manager_notify_tells_every_plugin_even_when_one_raises() -> None:
    class Broken(BasePlugin):
        async def on_agent_error_callback(self, **kwargs: Any) -> None:
            del kwargs
            raise RuntimeError("plugin bug")

    recorder = Recorder()
    manager = PluginManager([Broken("broken"), recorder])

    await manager.notify(
        "on_agent_error_callback", agent=None, callback_context=None, error=ValueError("x")
    )

    assert recorder.calls == ["agent_error"]
    assert manager.get_plugin("recorder") is recorder
    with pytest.raises(ValueError, match="unique"):
        manager.register_plugin(Recorder())
