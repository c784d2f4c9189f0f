"""The dev UI's span store stays bounded however long a session grows (app.observability.spans).

A model call's request holds the whole conversation; the first recorder kept a reference to it
in every kept span, so one 300-turn session held 310 MB. These tests attack that: a long
session, details evicted past their bound, a request longer than what a trace keeps.
"""

import gc
import json
import weakref
from typing import Any

from google.genai import types

from app.agents import LlmAgent
from app.contexts.callback import CallbackContext
from app.invocations.runner import InMemoryRunner
from app.models.llm import LlmRequest, LlmResponse
from app.models.scripted import Rule, ScriptedLlm
from app.observability.spans import MAX_REQUEST_CONTENTS, Span, SpanStore
from app.plugins.span_recorder import SpanRecorder

QUESTION = types.Content(role="user", parts=[types.Part(text="What is the capital of France?")])


def get_capital_city(country: str) -> str:
    """Retrieves the capital city of a country.

    Args:
        country: the country's name.
    """
    return {"france": "Paris"}.get(country.lower(), "unknown")


def _agent(**callbacks: Any) -> LlmAgent:
    return LlmAgent(
        name="capital",
        model=ScriptedLlm(
            rules=[
                Rule(
                    when_user=r"capital of (?P<country>[^?]+)",
                    call=("get_capital_city", {"country": "{country}"}),
                ),
                Rule(when_tool="get_capital_city", say="The capital of {country} is {result}."),
            ]
        ),
        tools=[get_capital_city],
        **callbacks,
    )


async def _turns(runner: InMemoryRunner, session_id: str, count: int) -> None:
    for _ in range(count):
        async for _event in runner.run_async(
            user_id="u", session_id=session_id, new_message=QUESTION
        ):
            pass


def _span(name: str) -> Span:
    return Span(
        name=name,
        trace_id=1,
        span_id=2,
        parent_span_id=None,
        app_name="a",
        user_id="u",
        session_id="s",
    )


def test_only_the_latest_detailed_spans_keep_their_details() -> None:
    store = SpanStore(max_detailed=2)
    spans = [_span(f"call_llm {n}") for n in range(4)]
    for span in spans:
        store.add(span, detailed=True)
        span.detail("gcp.vertex.agent.llm_response", lambda: "{}")
    kept = [("gcp.vertex.agent.llm_response" in span.resolved_attributes()) for span in spans]
    assert kept == [False, False, True, True]
    # A detail set after the span lost its details is not kept either (nothing grows back).
    spans[0].detail("gcp.vertex.agent.llm_request", lambda: "{}")
    assert spans[0].lazy == {}
    assert [span.name for span in store.session_spans("a", "s")] == [span.name for span in spans]


async def test_a_requests_trace_keeps_its_latest_contents_and_counts_the_rest() -> None:
    store = SpanStore()
    runner = InMemoryRunner(agent=_agent(), app_name="capitals", plugins=[SpanRecorder(store)])
    session = await runner.session_service.create_session(app_name="capitals", user_id="u")
    await _turns(runner, session.id, 8)  # 4 contents a turn
    last_call = [
        span for span in store.session_spans("capitals", session.id) if span.name == "call_llm"
    ][-1]
    attributes = last_call.resolved_attributes()
    request = json.loads(attributes["gcp.vertex.agent.llm_request"])
    assert len(request["contents"]) == MAX_REQUEST_CONTENTS
    assert attributes["agentd.llm_request.contents_omitted"] == 8 * 4 - 1 - MAX_REQUEST_CONTENTS
    assert request["contents"][-1]["parts"][0]["function_response"]["name"] == "get_capital_city"


async def test_the_trace_shows_the_request_as_the_agents_own_callbacks_left_it() -> None:
    # The recorder's hook runs before the agent's before_model_callback: what the model was sent
    # is what the agent's callback made of the request.
    def add_instruction(
        callback_context: CallbackContext,  # noqa: ARG001 - passed by this name
        llm_request: LlmRequest,
    ) -> LlmResponse | None:
        llm_request.append_instructions(["Answer in French."])
        return None

    store = SpanStore()
    runner = InMemoryRunner(
        agent=_agent(before_model_callback=add_instruction),
        app_name="capitals",
        plugins=[SpanRecorder(store)],
    )
    session = await runner.session_service.create_session(app_name="capitals", user_id="u")
    await _turns(runner, session.id, 1)
    call = next(
        span for span in store.session_spans("capitals", session.id) if span.name == "call_llm"
    )
    request = json.loads(call.resolved_attributes()["gcp.vertex.agent.llm_request"])
    assert "Answer in French." in json.dumps(request["config"]["system_instruction"])


async def test_a_long_session_does_not_keep_its_requests_once_per_span() -> None:
    # Each model call's request holds the conversation so far: a span that kept it made one
    # session's memory grow with the square of its length (300 turns: 310 MB, measured with
    # tracemalloc; now 4 MB, all of it the spans themselves).
    requests: list[weakref.ref[LlmRequest]] = []

    def watch(
        callback_context: CallbackContext,  # noqa: ARG001 - passed by this name
        llm_request: LlmRequest,
    ) -> LlmResponse | None:
        requests.append(weakref.ref(llm_request))
        return None

    store = SpanStore()
    runner = InMemoryRunner(
        agent=_agent(before_model_callback=watch),
        app_name="capitals",
        plugins=[SpanRecorder(store)],
    )
    session = await runner.session_service.create_session(app_name="capitals", user_id="u")
    await _turns(runner, session.id, 30)
    gc.collect()
    assert len(requests) == 60
    assert [ref for ref in requests if ref() is not None] == []
    assert len(store.session_spans("capitals", session.id)) == 30 * 5


def test_a_sessions_trace_index_stays_within_the_spans_kept() -> None:
    store = SpanStore(max_spans=3)
    for trace_id in range(5):
        span = _span(f"invocation {trace_id}")
        span.trace_id = trace_id
        store.add(span)
    assert [span.trace_id for span in store.session_spans("a", "s")] == [2, 3, 4]
    assert list(store._traces[("a", "s")]) == [2, 3, 4]
