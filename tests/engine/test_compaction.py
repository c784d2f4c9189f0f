"""Compaction through the in-process Runner and token budgets in the model's request (issue 30),
on SQLite and PostgreSQL."""

from typing import Any

import pytest
from google.genai import types

from app.agents import LlmAgent
from app.agents.contents import SUMMARY_LEAD
from app.apps import App, EventsCompactionConfig
from app.apps.base_events_summarizer import BaseEventsSummarizer, summary_event
from app.contexts.invocation import RunConfig
from app.invocations.runner import Runner
from app.models.llm import LlmResponse
from app.sessions.models import Event, EventActions
from tests.engine.conftest import Services
from tests.engine.helpers import ScriptModel, calls_response, text_response, user_message

#: `actions.compaction` of an event ADK 2.13 stored (LlmEventSummarizer's output, by alias,
#: None left out).
ADK_ACTIONS = {
    "stateDelta": {},
    "artifactDelta": {},
    "requestedAuthConfigs": {},
    "requestedToolConfirmations": {},
    "compaction": {
        "startTimestamp": 1767225600.5,
        "endTimestamp": 1767225611.25,
        "compactedContent": {"parts": [{"text": "The user asked for X."}], "role": "model"},
    },
}


class Summarizer(BaseEventsSummarizer):
    """Counts its calls; "S<n>" each time, or raises when told to."""

    def __init__(self, *, fail: bool = False) -> None:
        self.calls: list[list[Event]] = []
        self.fail = fail

    async def maybe_summarize_events(self, *, events: list[Event]) -> Event | None:
        """A fixed summary."""
        self.calls.append(events)
        if self.fail:
            raise RuntimeError("no summary today")
        content = types.Content(role="model", parts=[types.Part(text=f"S{len(self.calls)}")])
        return summary_event(events, content)


def lookup(city: str) -> dict[str, Any]:
    """Looks a city up."""
    return {"city": city, "weather": "sunny " * 20}


def _texts(contents: list[types.Content]) -> list[str]:
    return ["".join(p.text or "" for p in c.parts or ()) for c in contents]


def _compacting_runner(
    services: Services, model: ScriptModel, summarizer: Summarizer, *, interval: int
) -> Runner:
    """A runner of an app whose root agent answers with `model`, compacting every `interval`
    invocations through `summarizer`, with no overlap."""
    app = App(
        name="app",
        root_agent=LlmAgent(name="root", model=model),
        events_compaction_config=EventsCompactionConfig(
            compaction_interval=interval, overlap_size=0, summarizer=summarizer
        ),
    )
    return Runner(app=app, session_service=services.sessions)


async def _turn(runner: Runner, text: str, **kwargs: Any) -> list[Event]:
    return [
        e
        async for e in runner.run_async(
            user_id="u", session_id="s", new_message=user_message(text), **kwargs
        )
    ]


def test_event_compaction_reads_and_writes_adks_wire_shape() -> None:
    actions = EventActions.model_validate(ADK_ACTIONS)
    assert actions.compaction is not None
    assert actions.compaction.compacted_content.parts
    assert actions.to_wire() == ADK_ACTIONS


async def test_run_async_compacts_at_its_end_and_the_next_request_starts_from_it(
    services: Services,
) -> None:
    model = ScriptModel(replies=[text_response("ok")])
    summarizer = Summarizer()
    runner = _compacting_runner(services, model, summarizer, interval=2)
    await services.sessions.create_session(app_name="app", user_id="u", session_id="s")
    await _turn(runner, "one")
    answered = await _turn(runner, "two")
    assert all(e.actions.compaction is None for e in answered)  # never in the answer
    assert len(summarizer.calls) == 1
    await _turn(runner, "three")
    assert _texts(model.requests[-1].contents) == [f"{SUMMARY_LEAD}S1", "three"]
    session = await services.sessions.get_session(app_name="app", user_id="u", session_id="s")
    assert session is not None
    assert [e.actions.compaction is not None for e in session.events] == [
        False, False, False, False, True, False, False,
    ]  # fmt: skip


async def test_a_failing_summarizer_changes_nothing(services: Services) -> None:
    model = ScriptModel(replies=[text_response("ok")])
    summarizer = Summarizer(fail=True)
    runner = _compacting_runner(services, model, summarizer, interval=1)
    await services.sessions.create_session(
        app_name="app", user_id="u", session_id="s", state={"k": 1}
    )
    await _turn(runner, "one")
    assert len(summarizer.calls) == 1
    session = await services.sessions.get_session(app_name="app", user_id="u", session_id="s")
    assert session is not None
    assert len(session.events) == 2
    assert session.state == {"k": 1}
    await _turn(runner, "two")
    assert _texts(model.requests[-1].contents) == ["one", "ok", "two"]


def test_token_threshold_compaction_is_refused_clearly() -> None:
    with pytest.raises(ValueError, match="token threshold"):
        EventsCompactionConfig(token_threshold=100, event_retention_size=2)
    with pytest.raises(ValueError, match="set together"):
        EventsCompactionConfig(compaction_interval=2)


async def test_token_budget_drops_whole_turns_never_a_call_without_its_response(
    services: Services,
) -> None:
    replies: list[LlmResponse] = []
    for city in ("paris", "rome", "oslo"):
        replies += [calls_response(("lookup", {"city": city})), text_response(f"{city} done")]
    model = ScriptModel(replies=replies)
    runner = services.runner(LlmAgent(name="root", model=model, tools=[lookup]))
    await services.sessions.create_session(app_name="app", user_id="u", session_id="s")
    for city in ("paris", "rome"):
        await _turn(runner, f"weather in {city}?")
    # The rome turn as the model last saw it (message, call, response), and a little more.
    budget = model.estimate_tokens(model.requests[-1].contents[4:]) + 40
    await _turn(runner, "weather in oslo?", run_config=RunConfig(max_context_tokens=budget))
    for request in model.requests[-2:]:
        contents = request.contents
        calls = {p.function_call.id for c in contents for p in c.parts or () if p.function_call}
        answers = {
            p.function_response.id for c in contents for p in c.parts or () if p.function_response
        }
        assert calls == answers  # every call with its response, every response with its call
        assert model.estimate_tokens(contents) <= budget
        assert _texts(contents)[0].startswith("weather in")  # a turn's start
    assert _texts(model.requests[-2].contents)[0] == "weather in rome?"
    assert _texts(model.requests[-1].contents)[0] == "weather in oslo?"


async def test_the_latest_turn_is_kept_even_over_budget(services: Services) -> None:
    call, ok = calls_response(("lookup", {"city": "x"})), text_response("ok")
    model = ScriptModel(replies=[call, ok, call, ok])
    runner = services.runner(LlmAgent(name="root", model=model, tools=[lookup]))
    await services.sessions.create_session(app_name="app", user_id="u", session_id="s")
    await _turn(runner, "earlier")
    await _turn(runner, "now", run_config=RunConfig(max_context_tokens=1))
    last = model.requests[-1].contents
    assert _texts(last)[0] == "now"
    assert [bool(p.function_call) for p in last[1].parts or ()] == [True]
    assert [bool(p.function_response) for p in last[2].parts or ()] == [True]
