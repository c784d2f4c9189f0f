"""An LlmAgent on the Gemini backend (real google-genai client, local stub server)."""

from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from google.genai import errors, types
from pydantic import BaseModel

from app.agents import LlmAgent
from app.agents.callback_context import CallbackContext
from app.contexts.invocation import RunConfig, StreamingMode
from app.invocations.runner import InvocationFailed
from app.models.gemini import Gemini
from app.models.llm import LlmRequest
from app.planners import BuiltInPlanner
from tests.engine.conftest import Services
from tests.engine.helpers import run_turn, text_response, texts
from tests.gemini_stub import GeminiStub


def get_capital_city(country: str) -> str:
    """Retrieves the capital city of a given country."""
    return {"france": "Paris"}.get(country.lower(), "unknown")


@pytest.fixture
def stub() -> Iterator[GeminiStub]:
    """A started Gemini API stub."""
    with GeminiStub() as server:
        yield server


@pytest.fixture
async def gemini(stub: GeminiStub) -> AsyncIterator[Gemini]:
    """The Gemini backend pointed at the stub."""
    backend = Gemini(model="gemini-2.0-flash", api_key="test-key", base_url=stub.base_url)
    yield backend
    await backend.aclose()


async def test_gemini_function_call_round_trip(
    services: Services, stub: GeminiStub, gemini: Gemini
) -> None:
    stub.reply_function_call("get_capital_city", {"country": "France"})
    stub.reply_text("The capital of France is Paris.")
    agent = LlmAgent(
        name="capital", model=gemini, instruction="Find capitals.", tools=[get_capital_city]
    )
    await services.sessions.create_session(app_name="app", user_id="u", session_id="s")
    events = await run_turn(services.runner(agent), "What is the capital of France?")

    assert texts(events) == ["What is the capital of France?", "The capital of France is Paris."]
    (response,) = [r for e in events for r in e.get_function_responses()]
    assert response.response == {"result": "Paris"}
    first, second = stub.requests
    declared = first["body"]["tools"][0]["functionDeclarations"][0]
    assert declared["name"] == "get_capital_city"
    assert first["body"]["systemInstruction"]["parts"][0]["text"] == "Find capitals."
    # The second call carries the function call and its response back to the model.
    sent_parts = [p for c in second["body"]["contents"] for p in c["parts"]]
    assert any("functionResponse" in p for p in sent_parts)


async def test_gemini_streaming_yields_partials_but_persists_only_the_final(
    services: Services, stub: GeminiStub, gemini: Gemini
) -> None:
    stub.reply_stream(["Hel", "lo ", "world"])
    agent = LlmAgent(name="streamer", model=gemini)
    await services.sessions.create_session(app_name="app", user_id="u", session_id="s")
    events = await run_turn(
        services.runner(agent), "hi", run_config=RunConfig(streaming_mode=StreamingMode.SSE)
    )
    partials = [e for e in events if e.partial]
    assert texts(partials) == ["Hel", "lo ", "world"]
    assert all(e.seq is None for e in partials)
    assert texts(events)[-1] == "Hello world"
    assert events[-1].id == partials[0].id  # chunks and final answer share one event id
    stored = await services.sessions.get_session(app_name="app", user_id="u", session_id="s")
    assert stored is not None
    assert texts(stored.events) == ["hi", "Hello world"]


async def test_gemini_api_error_goes_to_on_model_error_callback(
    services: Services, stub: GeminiStub, gemini: Gemini
) -> None:
    stub.reply_error(429, "quota exhausted", "RESOURCE_EXHAUSTED")
    seen: dict[str, Any] = {}

    def fallback(
        callback_context: CallbackContext, llm_request: LlmRequest, error: Exception
    ) -> Any:
        del callback_context, llm_request
        seen["error"] = error
        return text_response("Sorry, try again later.")

    agent = LlmAgent(name="agent", model=gemini, on_model_error_callback=fallback)
    await services.sessions.create_session(app_name="app", user_id="u", session_id="s")
    events = await run_turn(services.runner(agent), "hi")
    assert isinstance(seen["error"], errors.APIError)
    assert seen["error"].code == 429
    assert texts(events)[-1] == "Sorry, try again later."


async def test_gemini_api_error_without_callback_fails_the_invocation_with_a_typed_event(
    services: Services, stub: GeminiStub, gemini: Gemini
) -> None:
    stub.reply_error(400, "bad request", "INVALID_ARGUMENT")
    agent = LlmAgent(name="agent", model=gemini)
    await services.sessions.create_session(app_name="app", user_id="u", session_id="s")
    with pytest.raises(InvocationFailed) as failure:
        await run_turn(services.runner(agent), "hi")
    assert isinstance(failure.value.__cause__, errors.APIError)
    assert failure.value.__cause__.code == 400
    stored = await services.sessions.get_session(app_name="app", user_id="u", session_id="s")
    assert stored is not None
    assert stored.events[-1].error_code == "ClientError"


class CityAnswer(BaseModel):
    """A structured answer."""

    city: str
    country: str


async def test_structured_output_and_thinking_reach_gemini_on_the_wire(
    services: Services, stub: GeminiStub, gemini: Gemini
) -> None:
    stub.reply_json(
        {
            "candidates": [
                {
                    "content": {
                        "role": "model",
                        "parts": [
                            {"text": "France's capital is well known.", "thought": True},
                            {"text": '{"city": "Paris", "country": "France"}'},
                        ],
                    },
                    "finishReason": "STOP",
                }
            ]
        }
    )
    agent = LlmAgent(
        name="capital",
        model=gemini,
        output_schema=CityAnswer,
        output_key="answer",
        planner=BuiltInPlanner(
            thinking_config=types.ThinkingConfig(include_thoughts=True, thinking_budget=512)
        ),
    )
    await services.sessions.create_session(app_name="app", user_id="u", session_id="s")

    events = await run_turn(services.runner(agent), "Capital of France?")

    config = stub.requests[0]["body"]["generationConfig"]
    assert config["responseMimeType"] == "application/json"
    assert set(config["responseSchema"]["properties"]) == {"city", "country"}
    # google-genai passes the thinking config through with its field names (the API takes both).
    assert config["thinkingConfig"] == {"include_thoughts": True, "thinking_budget": 512}
    # The thought is stored on the event, apart from the answer, which is validated into state.
    final = events[-1]
    assert final.content is not None
    assert final.content.parts is not None
    assert [p.thought for p in final.content.parts] == [True, None]
    stored = await services.sessions.get_session(app_name="app", user_id="u", session_id="s")
    assert stored is not None
    assert stored.state["answer"] == {"city": "Paris", "country": "France"}
