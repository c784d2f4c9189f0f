"""Every callback's None-vs-override semantics, list ordering, sync/async forms and plugins.

One table row per callback kind: which agent slot and plugin hook it is, the override value a
callback returns, and what the turn's final text is by default and when overridden. Each row is
run in every form (sync, async, list, plugin) over a tiny capital agent on the in-memory service.
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from google.genai import types

from app.agents import LlmAgent
from app.invocations.runner import Runner
from app.plugins import BasePlugin
from app.sessions import InMemorySessionService
from app.sessions.models import Event
from tests.engine.helpers import FailingLlm, text_response, texts


def lookup(country: str) -> str:
    """Capital of a country."""
    return {"france": "Paris"}.get(country.lower(), "unknown")


def broken_lookup(country: str) -> str:
    """A tool that always fails."""
    raise RuntimeError(f"lookup of {country} failed")


@dataclass(frozen=True)
class Kind:
    """One callback kind."""

    slot: str
    plugin_hook: str
    override: Callable[[str], Any]
    default: str | None  # final text when every callback returns None (None: the turn fails)
    failing_model: bool = False
    failing_tool: bool = False


def _content(label: str) -> types.Content:
    return types.Content(role="model", parts=[types.Part(text=label)])


KINDS = {
    "before_agent": Kind("before_agent_callback", "before_agent_callback", _content, "Paris"),
    "after_agent": Kind("after_agent_callback", "after_agent_callback", _content, "Paris"),
    "before_model": Kind("before_model_callback", "before_model_callback", text_response, "Paris"),
    "after_model": Kind("after_model_callback", "after_model_callback", text_response, "Paris"),
    "before_tool": Kind(
        "before_tool_callback", "before_tool_callback", lambda t: {"result": t}, "Paris"
    ),
    "after_tool": Kind(
        "after_tool_callback", "after_tool_callback", lambda t: {"result": t}, "Paris"
    ),
    "on_model_error": Kind(
        "on_model_error_callback",
        "on_model_error_callback",
        text_response,
        None,
        failing_model=True,
    ),
    "on_tool_error": Kind(
        "on_tool_error_callback",
        "on_tool_error_callback",
        lambda t: {"result": t},
        None,
        failing_tool=True,
    ),
}


MODEL_SLOTS = {"before_model_callback", "after_model_callback"}


def make_callback(calls: list[str], label: str, kind: Kind, *, override: bool, form: str) -> Any:
    """A callback that records `label` and returns the kind's override (or None)."""

    def sync_callback(**_: Any) -> Any:
        calls.append(label)
        return kind.override(label) if override else None

    async def async_callback(**kwargs: Any) -> Any:
        return sync_callback(**kwargs)

    return async_callback if form == "async" else sync_callback


class RecordingPlugin(BasePlugin):
    """A plugin whose hook of one kind records a call and may override."""

    def __init__(self, kind: Kind, calls: list[str], *, override: bool) -> None:
        super().__init__("recording")
        self._kind = kind
        self._calls = calls
        self._override = override

    def __getattribute__(self, name: str) -> Any:
        kind: Kind = object.__getattribute__(self, "_kind")
        if name == kind.plugin_hook:

            async def hook(**_: Any) -> Any:
                object.__getattribute__(self, "_calls").append("plugin")
                if object.__getattribute__(self, "_override"):
                    return kind.override("plugin")
                return None

            return hook
        return object.__getattribute__(self, name)


async def outcome(kind: Kind, callbacks: Any, plugins: list[BasePlugin] | None = None) -> str:
    """The final text of one turn ('error' if the turn failed)."""
    agent = LlmAgent(
        name="capital",
        model=FailingLlm() if kind.failing_model else "scripted",
        instruction="Find capitals.",
        tools=[broken_lookup if kind.failing_tool else lookup],
        **{kind.slot: callbacks},
    )
    sessions = InMemorySessionService()
    await sessions.create_session(app_name="app", user_id="u", session_id="s")
    runner = Runner(app_name="app", agent=agent, session_service=sessions, plugins=plugins)
    events: list[Event] = []
    try:
        async for event in runner.run_async(
            user_id="u",
            session_id="s",
            new_message=types.Content(role="user", parts=[types.Part(text="capital of France?")]),
        ):
            events.append(event)
    except Exception:
        return "error"
    return texts(events)[-1]


@pytest.mark.parametrize("form", ["sync", "async"])
@pytest.mark.parametrize("name", list(KINDS))
async def test_callback_returning_none_keeps_the_default(name: str, form: str) -> None:
    kind = KINDS[name]
    calls: list[str] = []
    result = await outcome(kind, make_callback(calls, "cb", kind, override=False, form=form))
    assert result == (kind.default or "error")
    # Model callbacks run per model call: the function call, then the answer.
    assert calls == ["cb"] * (2 if kind.slot in MODEL_SLOTS else 1)


@pytest.mark.parametrize("form", ["sync", "async"])
@pytest.mark.parametrize("name", list(KINDS))
async def test_callback_returning_a_value_overrides(name: str, form: str) -> None:
    kind = KINDS[name]
    calls: list[str] = []
    result = await outcome(kind, make_callback(calls, "override", kind, override=True, form=form))
    assert result == "override"
    assert calls == ["override"]


@pytest.mark.parametrize("name", list(KINDS))
async def test_callback_list_runs_in_order_and_first_non_none_wins(name: str) -> None:
    kind = KINDS[name]
    calls: list[str] = []
    callbacks = [
        make_callback(calls, "first", kind, override=False, form="sync"),
        make_callback(calls, "second", kind, override=True, form="async"),
        make_callback(calls, "third", kind, override=True, form="sync"),
    ]
    assert await outcome(kind, callbacks) == "second"
    assert calls == ["first", "second"]


@pytest.mark.parametrize("name", list(KINDS))
async def test_plugin_runs_first_and_its_override_skips_agent_callbacks(name: str) -> None:
    kind = KINDS[name]
    calls: list[str] = []
    callback = make_callback(calls, "agent", kind, override=True, form="sync")
    overriding = RecordingPlugin(kind, calls, override=True)
    assert await outcome(kind, callback, plugins=[overriding]) == "plugin"
    assert calls == ["plugin"]

    calls.clear()
    passive = RecordingPlugin(kind, calls, override=False)
    assert await outcome(kind, callback, plugins=[passive]) == "agent"
    assert calls == ["plugin", "agent"]
