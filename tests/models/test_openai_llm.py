"""OpenAILlm through the real `openai` SDK against the local `OpenAIStub` (issue 17, acceptance 1).

The agent-level tests run an LlmAgent through a Runner on real session services (SQLite with
and without the fast path, PostgreSQL); the others call the backend directly and read what
reached the stub, which is the Chat Completions request exactly as the SDK sent it.
"""

import asyncio
import base64
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from google.genai import types
from pydantic import BaseModel
from sqlalchemy.ext.asyncio import AsyncEngine

from app.agents import LlmAgent
from app.agents.callback_context import CallbackContext
from app.artifacts.blobstore import LocalBlobStore
from app.artifacts.service import ArtifactService
from app.contexts.invocation import RunConfig, StreamingMode
from app.errors import ModelRateLimited, ModelRequestRejected, ModelUnavailable
from app.memory.database import DatabaseMemoryService
from app.models.llm import LlmRequest, LlmResponse
from app.models.openai_llm import OpenAILlm
from app.sessions.database import DatabaseSessionService
from app.sessions.models import Event
from tests.engine.conftest import Services
from tests.engine.helpers import run_turn, text_response, texts, user_message
from tests.openai_stub import (
    USAGE,
    OpenAIStub,
    chunk,
    completion,
    text_chunks,
    tool_call_chunks,
)

MODEL = "openai/gpt-4o-mini"
SENT_MODEL = "gpt-4o-mini"
# Real OpenAI sends both; the SDK prefers the milliseconds, which keeps the retries quick here.
RETRY_NOW = {"retry-after": "0", "retry-after-ms": "1"}


def get_capital_city(country: str) -> str:
    """Retrieves the capital city of a given country."""
    return {"france": "Paris", "japan": "Tokyo"}.get(country.lower(), "unknown")


@pytest.fixture
async def services(db_engine: AsyncEngine, tmp_path: Path) -> AsyncIterator[Services]:
    """Database session, artifact and memory services (SQLite and PostgreSQL runs)."""
    blobs = LocalBlobStore(tmp_path / "blobs")
    yield Services(
        sessions=DatabaseSessionService(db_engine),
        artifacts=ArtifactService(db_engine, blobs, max_artifact_bytes=1024 * 1024),
        memory=DatabaseMemoryService(db_engine),
    )
    await blobs.aclose()


@pytest.fixture
def stub() -> Iterator[OpenAIStub]:
    """A started Chat Completions stub."""
    with OpenAIStub() as server:
        yield server


@pytest.fixture
async def llm(stub: OpenAIStub) -> AsyncIterator[OpenAILlm]:
    """The OpenAI backend pointed at the stub."""
    backend = OpenAILlm(model=MODEL, api_key="test-key", base_url=stub.base_url)
    yield backend
    await backend.aclose()


async def _session(services: Services) -> None:
    await services.sessions.create_session(app_name="app", user_id="u", session_id="s")


async def _stored(services: Services) -> list[Event]:
    session = await services.sessions.get_session(app_name="app", user_id="u", session_id="s")
    assert session is not None
    return session.events


def _request(*contents: types.Content, **config: Any) -> LlmRequest:
    return LlmRequest(
        model=MODEL,
        contents=list(contents) or [user_message("Hi")],
        config=types.GenerateContentConfig(**config),
    )


async def _collect(llm: OpenAILlm, request: LlmRequest, *, stream: bool) -> list[LlmResponse]:
    return [r async for r in llm.generate_content_async(request, stream=stream)]


def _parts(response: LlmResponse | Event) -> list[types.Part]:
    assert response.content is not None
    return list(response.content.parts or [])


# -- acceptance 1: through an LlmAgent and a Runner -----------------------------------------------


async def test_plain_text_answer(services: Services, stub: OpenAIStub, llm: OpenAILlm) -> None:
    stub.reply_text("Bonjour!")
    agent = LlmAgent(name="greeter", model=llm, instruction="Greet in French.")
    await _session(services)

    events = await run_turn(services.runner(agent), "Hello")

    assert texts(events) == ["Hello", "Bonjour!"]
    assert events[-1].model_version == "gpt-stub"
    (request,) = stub.requests
    assert request["path"] == "/v1/chat/completions"
    assert request["headers"]["authorization"] == "Bearer test-key"
    body = request["body"]
    assert body["model"] == SENT_MODEL  # the routing prefix is stripped
    assert body["messages"] == [
        {"role": "system", "content": body["messages"][0]["content"]},
        {"role": "user", "content": "Hello"},
    ]
    assert "Greet in French." in body["messages"][0]["content"]
    assert "stream" not in body
    assert "tools" not in body
    assert texts(await _stored(services)) == ["Hello", "Bonjour!"]


async def test_function_call_round_trip(
    services: Services, stub: OpenAIStub, llm: OpenAILlm
) -> None:
    stub.reply_tool_calls(("call_abc", "get_capital_city", {"country": "France"}))
    stub.reply_text("The capital of France is Paris.")
    agent = LlmAgent(
        name="capital", model=llm, instruction="Find capitals.", tools=[get_capital_city]
    )
    await _session(services)

    events = await run_turn(services.runner(agent), "What is the capital of France?")

    assert texts(events)[-1] == "The capital of France is Paris."
    (call,) = [c for e in events for c in e.get_function_calls()]
    assert (call.id, call.name, call.args) == (
        "call_abc",
        "get_capital_city",
        {"country": "France"},
    )
    (answer,) = [r for e in events for r in e.get_function_responses()]
    assert (answer.id, answer.response) == ("call_abc", {"result": "Paris"})

    first, second = stub.requests
    (tool,) = first["body"]["tools"]
    assert tool["type"] == "function"
    assert tool["function"]["name"] == "get_capital_city"
    assert tool["function"]["description"].startswith("Retrieves the capital city")
    assert tool["function"]["parameters"]["properties"]["country"]["type"] == "string"
    # The second call carries the assistant's tool call and the tool's answer to it.
    assistant, tool_message = second["body"]["messages"][-2:]
    assert assistant == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_abc",
                "type": "function",
                "function": {"name": "get_capital_city", "arguments": '{"country": "France"}'},
            }
        ],
    }
    assert tool_message == {
        "role": "tool",
        "tool_call_id": "call_abc",
        "content": json.dumps({"result": "Paris"}),
    }
    stored = await _stored(services)
    assert [len(e.get_function_calls()) for e in stored] == [0, 1, 0, 0]


async def test_two_parallel_tool_calls_in_one_step(
    services: Services, stub: OpenAIStub, llm: OpenAILlm
) -> None:
    stub.reply_tool_calls(
        ("call_1", "get_capital_city", {"country": "France"}),
        ("call_2", "get_capital_city", {"country": "Japan"}),
    )
    stub.reply_text("Paris and Tokyo.")
    agent = LlmAgent(name="capital", model=llm, tools=[get_capital_city])
    await _session(services)

    events = await run_turn(services.runner(agent), "Capitals of France and Japan?")

    calls = [c for e in events for c in e.get_function_calls()]
    assert [(c.id, c.args) for c in calls] == [
        ("call_1", {"country": "France"}),
        ("call_2", {"country": "Japan"}),
    ]
    assert len([e for e in events if e.get_function_calls()]) == 1  # one step, two calls
    answers = {r.id: r.response for e in events for r in e.get_function_responses()}
    assert answers == {"call_1": {"result": "Paris"}, "call_2": {"result": "Tokyo"}}
    assert texts(events)[-1] == "Paris and Tokyo."
    messages = stub.requests[1]["body"]["messages"]
    assert [m["role"] for m in messages[-3:]] == ["assistant", "tool", "tool"]
    assert [c["id"] for c in messages[-3]["tool_calls"]] == ["call_1", "call_2"]
    assert [(m["tool_call_id"], json.loads(m["content"])) for m in messages[-2:]] == [
        ("call_1", {"result": "Paris"}),
        ("call_2", {"result": "Tokyo"}),
    ]
    assert "parallel_tool_calls" not in stub.requests[0]["body"]  # the API's default: allowed


async def test_streaming_yields_partials_but_stores_only_the_final(
    services: Services, stub: OpenAIStub, llm: OpenAILlm
) -> None:
    stub.reply_stream(text_chunks(["Hel", "lo ", "world"]))
    agent = LlmAgent(name="streamer", model=llm)
    await _session(services)

    events = await run_turn(
        services.runner(agent), "hi", run_config=RunConfig(streaming_mode=StreamingMode.SSE)
    )

    partials = [e for e in events if e.partial]
    assert texts(partials) == ["Hel", "lo ", "world"]
    assert all(e.seq is None for e in partials)
    final = events[-1]
    assert not final.partial
    assert _parts(final) == [types.Part(text="Hello world")]
    body = stub.requests[0]["body"]
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    stored = await _stored(services)
    assert texts(stored) == ["hi", "Hello world"]
    assert [e.id for e in stored].count(final.id) == 1


async def test_usage_and_finish_reason_are_on_the_stored_event(
    services: Services, stub: OpenAIStub, llm: OpenAILlm
) -> None:
    usage = {**USAGE, "prompt_tokens_details": {"cached_tokens": 8}}
    stub.reply_json(completion("Cut sho", finish_reason="length", usage=usage))
    agent = LlmAgent(name="agent", model=llm)
    await _session(services)

    await run_turn(services.runner(agent), "Say a lot")

    final = (await _stored(services))[-1]
    assert final.finish_reason == types.FinishReason.MAX_TOKENS
    assert final.usage_metadata == types.GenerateContentResponseUsageMetadata(
        prompt_token_count=12,
        candidates_token_count=7,
        total_token_count=19,
        cached_content_token_count=8,
    )
    assert final.model_version == "gpt-stub"
    assert texts([final]) == ["Cut sho"]


async def test_streamed_usage_and_finish_reason_are_on_the_stored_event(
    services: Services, stub: OpenAIStub, llm: OpenAILlm
) -> None:
    stub.reply_stream(text_chunks(["a", "b"], finish_reason="stop"))
    agent = LlmAgent(name="agent", model=llm)
    await _session(services)

    await run_turn(
        services.runner(agent), "hi", run_config=RunConfig(streaming_mode=StreamingMode.SSE)
    )

    final = (await _stored(services))[-1]
    assert final.finish_reason == types.FinishReason.STOP
    assert final.usage_metadata is not None
    assert (final.usage_metadata.prompt_token_count, final.usage_metadata.total_token_count) == (
        12,
        19,
    )


async def test_a_429_with_retry_after_is_retried_then_answered(
    services: Services, stub: OpenAIStub, llm: OpenAILlm
) -> None:
    stub.reply_error(429, "Rate limit reached", error_type="requests", headers=RETRY_NOW)
    stub.reply_text("Answered after the retry.")
    agent = LlmAgent(name="agent", model=llm)
    await _session(services)

    events = await run_turn(services.runner(agent), "hi")

    assert texts(events)[-1] == "Answered after the retry."
    assert len(stub.requests) == 2
    assert stub.requests[0]["body"] == stub.requests[1]["body"]
    assert stub.requests[1]["headers"]["x-stainless-retry-count"] == "1"


async def test_a_persistent_500_reaches_on_model_error_callback(
    services: Services, stub: OpenAIStub, llm: OpenAILlm
) -> None:
    for _ in range(3):  # the first try and the SDK's two retries
        stub.reply_error(500, "The server had an error", headers=RETRY_NOW)
    seen: dict[str, Any] = {}

    def fallback(
        callback_context: CallbackContext, llm_request: LlmRequest, error: Exception
    ) -> Any:
        del callback_context, llm_request
        seen["error"] = error
        return text_response("Sorry, the model is down.")

    agent = LlmAgent(name="agent", model=llm, on_model_error_callback=fallback)
    await _session(services)

    events = await run_turn(services.runner(agent), "hi")

    error = seen["error"]
    assert isinstance(error, ModelUnavailable)
    assert (error.provider, error.model, error.upstream_status) == ("openai", SENT_MODEL, 500)
    assert error.retryable
    assert "The server had an error" in (error.detail or "")
    assert "(after 2 retries)" in (error.detail or "")
    assert len(stub.requests) == 3
    assert texts(events)[-1] == "Sorry, the model is down."
    assert texts(await _stored(services)) == ["hi", "Sorry, the model is down."]


async def test_a_persistent_500_without_callback_ends_with_a_typed_error_event(
    services: Services, stub: OpenAIStub, llm: OpenAILlm
) -> None:
    for _ in range(3):
        stub.reply_error(503, "Overloaded", headers=RETRY_NOW)
    agent = LlmAgent(name="agent", model=llm)
    await _session(services)

    with pytest.raises(ModelUnavailable) as failure:
        await run_turn(services.runner(agent), "hi")

    assert failure.value.upstream_status == 503
    assert isinstance(failure.value.__cause__, Exception)
    assert type(failure.value.__cause__).__name__ == "InternalServerError"
    last = (await _stored(services))[-1]
    assert last.error_code == "model-unavailable"
    assert "Overloaded" in (last.error_message or "")


async def test_a_cancel_mid_stream_closes_the_upstream_connection(
    services: Services, stub: OpenAIStub, llm: OpenAILlm
) -> None:
    stub.reply_stream(text_chunks([f"word{i} " for i in range(40)]), delay=0.05)
    agent = LlmAgent(name="streamer", model=llm)
    await _session(services)
    first_chunk = asyncio.Event()

    async def consume() -> None:
        async for event in services.runner(agent).run_invocation(
            user_id="u",
            session_id="s",
            new_message=user_message("talk"),
            run_config=RunConfig(streaming_mode=StreamingMode.SSE),
        ):
            if event.partial:
                first_chunk.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(first_chunk.wait(), timeout=10)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    outcomes = await asyncio.to_thread(stub.wait_for_stream_end, 1, 10.0)
    assert outcomes == ["abandoned"]
    assert not any(e.partial for e in await _stored(services))


# -- the backend on its own ----------------------------------------------------------------------


async def test_closing_the_generator_early_closes_the_stream(
    stub: OpenAIStub, llm: OpenAILlm
) -> None:
    stub.reply_stream(text_chunks([f"w{i}" for i in range(40)]), delay=0.05)
    responses = llm.generate_content_async(_request(), stream=True)

    first = await anext(responses)
    await responses.aclose()

    assert first.partial
    assert await asyncio.to_thread(stub.wait_for_stream_end, 1, 10.0) == ["abandoned"]


async def test_a_whole_stream_is_read_to_its_end(stub: OpenAIStub, llm: OpenAILlm) -> None:
    stub.reply_stream(text_chunks(["a", "b"]))
    await _collect(llm, _request(), stream=True)
    assert await asyncio.to_thread(stub.wait_for_stream_end, 1, 10.0) == ["finished"]


async def test_streamed_tool_call_deltas_are_assembled_into_the_final_response(
    stub: OpenAIStub, llm: OpenAILlm
) -> None:
    stub.reply_stream(
        tool_call_chunks(
            [
                ("call_a", "get_capital_city", {"country": "France"}),
                ("call_b", "get_weather", {"city": "Paris", "unit": "celsius"}),
            ],
            split=3,
        )
    )

    responses = await _collect(llm, _request(), stream=True)

    # Argument deltas never surface as partial responses; the calls come once, whole.
    (final,) = responses
    assert not final.partial
    assert [p.function_call for p in _parts(final)] == [
        types.FunctionCall(id="call_a", name="get_capital_city", args={"country": "France"}),
        types.FunctionCall(
            id="call_b", name="get_weather", args={"city": "Paris", "unit": "celsius"}
        ),
    ]
    assert final.finish_reason == types.FinishReason.STOP
    assert final.usage_metadata is not None
    assert final.usage_metadata.total_token_count == 19


async def test_a_stream_of_text_then_a_tool_call_keeps_both(
    stub: OpenAIStub, llm: OpenAILlm
) -> None:
    calls = tool_call_chunks([("call_x", "lookup", {"q": "x"})])
    stub.reply_stream([chunk({"role": "assistant", "content": "Let me look."}), *calls[1:]])

    responses = await _collect(llm, _request(), stream=True)

    assert [r.partial for r in responses] == [True, None]
    parts = _parts(responses[-1])
    assert parts[0] == types.Part(text="Let me look.")
    assert parts[1].function_call == types.FunctionCall(id="call_x", name="lookup", args={"q": "x"})


async def test_whole_tool_calls_at_one_index_are_kept_apart(
    stub: OpenAIStub, llm: OpenAILlm
) -> None:
    """Some OpenAI-compatible servers send each call whole, every one at index 0."""
    whole = [
        {
            "index": 0,
            "id": f"call_{n}",
            "type": "function",
            "function": {"name": "get_capital_city", "arguments": json.dumps({"country": c})},
        }
        for n, c in ((1, "France"), (2, "Japan"))
    ]
    stub.reply_stream(
        [
            chunk({"role": "assistant", "tool_calls": [whole[0]]}),
            chunk({"tool_calls": [whole[1]]}),
            chunk({}, finish_reason="tool_calls"),
        ]
    )

    (final,) = await _collect(llm, _request(), stream=True)

    assert [
        (p.function_call.id, p.function_call.args) for p in _parts(final) if p.function_call
    ] == [
        ("call_1", {"country": "France"}),
        ("call_2", {"country": "Japan"}),
    ]
    assert final.usage_metadata is None  # that server sent none


async def test_reasoning_content_becomes_a_thought_part(stub: OpenAIStub, llm: OpenAILlm) -> None:
    stub.reply_json(completion("42", reasoning_content="6 times 7"))

    (response,) = await _collect(llm, _request(), stream=False)

    assert _parts(response) == [types.Part(text="6 times 7", thought=True), types.Part(text="42")]


async def test_malformed_tool_arguments_are_an_error_response(
    stub: OpenAIStub, llm: OpenAILlm
) -> None:
    bad = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a": '}}
    stub.reply_json(completion(None, tool_calls=[bad], finish_reason="tool_calls"))

    (response,) = await _collect(llm, _request(), stream=False)

    assert response.content is None
    assert response.error_code == "MALFORMED_FUNCTION_CALL"
    assert response.finish_reason == types.FinishReason.MALFORMED_FUNCTION_CALL


@pytest.mark.parametrize(
    ("reason", "expected"),
    [
        ("stop", types.FinishReason.STOP),
        ("length", types.FinishReason.MAX_TOKENS),
        ("content_filter", types.FinishReason.SAFETY),
        ("something_new", types.FinishReason.OTHER),
    ],
)
async def test_finish_reasons(
    stub: OpenAIStub, llm: OpenAILlm, reason: str, expected: types.FinishReason
) -> None:
    stub.reply_json(completion("x", finish_reason=reason))
    (response,) = await _collect(llm, _request(), stream=False)
    assert response.finish_reason == expected


# -- request mapping -----------------------------------------------------------------------------


async def test_history_maps_to_messages(stub: OpenAIStub, llm: OpenAILlm) -> None:
    png = b"\x89PNG\r\n\x1a\nfake"
    history = [
        types.Content(
            role="user",
            parts=[
                types.Part(text="What is in this picture?"),
                types.Part(inline_data=types.Blob(mime_type="image/png", data=png)),
            ],
        ),
        types.Content(
            role="model",
            parts=[
                types.Part(text="Thinking about it", thought=True),
                types.Part(text="Let me check."),
                types.Part(
                    function_call=types.FunctionCall(id="c1", name="lookup", args={"q": "cat"})
                ),
            ],
        ),
        types.Content(
            role="user",
            parts=[
                types.Part(
                    function_response=types.FunctionResponse(
                        id="c1", name="lookup", response={"found": "a cat"}
                    )
                )
            ],
        ),
        types.Content(role="model", parts=[types.Part(text="A cat.")]),
        types.Content(role="user", parts=[types.Part(text="Thanks")]),
    ]
    stub.reply_text("You're welcome.")
    request = _request(*history, system_instruction="Be brief.")

    await _collect(llm, request, stream=False)

    data_uri = "data:image/png;base64," + base64.b64encode(png).decode()
    assert stub.requests[0]["body"]["messages"] == [
        {"role": "system", "content": "Be brief."},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is in this picture?"},
                {"type": "image_url", "image_url": {"url": data_uri}},
            ],
        },
        {
            "role": "assistant",
            "content": "Let me check.",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "lookup", "arguments": '{"q": "cat"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": '{"found": "a cat"}'},
        {"role": "assistant", "content": "A cat."},
        {"role": "user", "content": "Thanks"},
    ]


async def test_calls_stored_without_ids_get_matching_ids(stub: OpenAIStub, llm: OpenAILlm) -> None:
    """A history written by a backend that gives no call ids still pairs calls and answers."""
    history = [
        user_message("Go"),
        types.Content(
            role="model",
            parts=[types.Part(function_call=types.FunctionCall(name="f", args={}))],
        ),
        types.Content(
            role="user",
            parts=[types.Part(function_response=types.FunctionResponse(name="f", response={}))],
        ),
    ]
    stub.reply_text("Done.")

    await _collect(llm, _request(*history), stream=False)

    messages = stub.requests[0]["body"]["messages"]
    assert messages[1]["tool_calls"][0]["id"] == messages[2]["tool_call_id"]


def _tools_config(**calling: Any) -> dict[str, Any]:
    declarations = [
        types.FunctionDeclaration(name=name, description=f"The {name} tool.")
        for name in ("alpha", "beta", "gamma")
    ]
    config: dict[str, Any] = {"tools": [types.Tool(function_declarations=declarations)]}
    if calling:
        config["tool_config"] = types.ToolConfig(
            function_calling_config=types.FunctionCallingConfig(**calling)
        )
    return config


@pytest.mark.parametrize(
    ("calling", "tool_choice", "declared"),
    [
        ({}, None, ["alpha", "beta", "gamma"]),
        ({"mode": "AUTO"}, "auto", ["alpha", "beta", "gamma"]),
        ({"mode": "NONE"}, "none", ["alpha", "beta", "gamma"]),
        ({"mode": "ANY"}, "required", ["alpha", "beta", "gamma"]),
        (
            {"mode": "ANY", "allowed_function_names": ["beta"]},
            {"type": "function", "function": {"name": "beta"}},
            ["alpha", "beta", "gamma"],
        ),
        (
            {"mode": "ANY", "allowed_function_names": ["alpha", "gamma"]},
            "required",
            ["alpha", "gamma"],
        ),
    ],
)
async def test_function_calling_mode_maps_to_tool_choice(
    stub: OpenAIStub,
    llm: OpenAILlm,
    calling: dict[str, Any],
    tool_choice: Any,
    declared: list[str],
) -> None:
    stub.reply_text("ok")

    await _collect(llm, _request(**_tools_config(**calling)), stream=False)

    body = stub.requests[0]["body"]
    assert body.get("tool_choice") == tool_choice
    assert [t["function"]["name"] for t in body["tools"]] == declared
    assert body["tools"][0]["function"]["parameters"] == {"type": "object", "properties": {}}


async def test_generation_config_maps_to_parameters(stub: OpenAIStub, llm: OpenAILlm) -> None:
    stub.reply_text("ok")
    request = _request(
        temperature=0.2,
        top_p=0.9,
        max_output_tokens=256,
        stop_sequences=["END", "STOP"],
        seed=7,
        candidate_count=1,
    )

    await _collect(llm, request, stream=False)

    body = stub.requests[0]["body"]
    assert body["temperature"] == 0.2
    assert body["top_p"] == 0.9
    assert body["max_completion_tokens"] == 256
    assert "max_tokens" not in body
    assert body["stop"] == ["END", "STOP"]
    assert body["seed"] == 7
    assert "n" not in body


class City(BaseModel):
    """A structured answer."""

    city: str
    country: str


async def test_response_schema_maps_to_json_schema_response_format(
    stub: OpenAIStub, llm: OpenAILlm
) -> None:
    stub.reply_text('{"city": "Paris", "country": "France"}')
    request = _request()
    request.set_output_schema(City)

    await _collect(llm, request, stream=False)

    response_format = stub.requests[0]["body"]["response_format"]
    assert response_format["type"] == "json_schema"
    assert response_format["json_schema"]["name"] == "response"
    assert response_format["json_schema"]["schema"] == City.model_json_schema()


async def test_json_mime_type_without_schema_is_json_mode(stub: OpenAIStub, llm: OpenAILlm) -> None:
    stub.reply_text("{}")
    await _collect(llm, _request(response_mime_type="application/json"), stream=False)
    assert stub.requests[0]["body"]["response_format"] == {"type": "json_object"}


# -- errors and configuration ----------------------------------------------------------------------


async def test_a_400_is_a_rejected_request_without_retries(
    stub: OpenAIStub, llm: OpenAILlm
) -> None:
    stub.reply_error(400, "Invalid 'messages'", error_type="invalid_request_error")

    with pytest.raises(ModelRequestRejected) as failure:
        await _collect(llm, _request(), stream=True)

    assert failure.value.upstream_status == 400
    assert not failure.value.retryable
    assert "Invalid 'messages'" in (failure.value.detail or "")
    assert "retr" not in (failure.value.detail or "")
    assert len(stub.requests) == 1


async def test_a_persistent_429_is_rate_limited(stub: OpenAIStub) -> None:
    llm = OpenAILlm(model=MODEL, api_key="k", base_url=stub.base_url, max_retries=1)
    for _ in range(2):
        stub.reply_error(429, "Slow down", headers=RETRY_NOW)

    with pytest.raises(ModelRateLimited) as failure:
        await _collect(llm, _request(), stream=False)
    await llm.aclose()

    assert (failure.value.upstream_status, failure.value.model) == (429, SENT_MODEL)
    assert "(after 1 retry)" in (failure.value.detail or "")
    assert len(stub.requests) == 2


async def test_an_unreachable_server_is_unavailable() -> None:
    with OpenAIStub() as gone:
        url = gone.base_url  # a port nobody listens on once the stub stops
    llm = OpenAILlm(model=MODEL, api_key="k", base_url=url, max_retries=0)

    with pytest.raises(ModelUnavailable) as failure:
        await _collect(llm, _request(), stream=False)
    await llm.aclose()

    assert failure.value.upstream_status is None


async def test_no_key_is_needed_until_the_first_call(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    llm = OpenAILlm(model=MODEL)

    with pytest.raises(ModelRequestRejected) as failure:
        await _collect(llm, _request(), stream=False)

    assert "OPENAI_API_KEY" in (failure.value.detail or "")


async def test_sdk_environment_variables_configure_the_client(
    stub: OpenAIStub, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "env-key")
    monkeypatch.setenv("OPENAI_BASE_URL", stub.base_url)
    monkeypatch.setenv("OPENAI_ORG_ID", "org-env")
    llm = OpenAILlm(model="gpt-4o", extra_headers={"X-Team": "agents"})
    stub.reply_text("ok")
    request = _request()
    request.model = None  # the backend's own model answers

    await _collect(llm, request, stream=False)
    await llm.aclose()

    headers = stub.requests[0]["headers"]
    assert headers["authorization"] == "Bearer env-key"
    assert headers["openai-organization"] == "org-env"
    assert headers["x-team"] == "agents"
    assert stub.requests[0]["body"]["model"] == "gpt-4o"


async def test_api_version_means_azure(stub: OpenAIStub) -> None:
    llm = OpenAILlm(
        model="my-deployment", api_key="azure-key", base_url=stub.root_url, api_version="2024-10-21"
    )
    stub.reply_text("ok")
    request = _request()
    request.model = None

    await _collect(llm, request, stream=False)
    await llm.aclose()

    sent = stub.requests[0]
    assert sent["path"] == "/openai/deployments/my-deployment/chat/completions"
    assert sent["query"] == "api-version=2024-10-21"
    assert sent["headers"]["api-key"] == "azure-key"


def test_model_names() -> None:
    llm = OpenAILlm(model="openai/gpt-4o-mini")
    assert llm.provider_model == "gpt-4o-mini"
    assert OpenAILlm(model="gpt-4o").provider_model == "gpt-4o"
    assert OpenAILlm.supported_models() == [r"openai/.+", r"gpt-.*", r"o[1-9].*", r"chatgpt-.*"]


async def test_a_local_server_needs_no_key(
    stub: OpenAIStub, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ollama, vLLM and LM Studio take any key; the SDK will not start without one."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_BASE_URL", stub.base_url)
    llm = OpenAILlm(model="openai/llama3.2")
    stub.reply_text("ok")
    request = _request()
    request.model = None

    (response,) = await _collect(llm, request, stream=False)
    await llm.aclose()

    assert _parts(response) == [types.Part(text="ok")]
    assert stub.requests[0]["headers"]["authorization"] == "Bearer no-key"
    assert stub.requests[0]["body"]["model"] == "llama3.2"


async def test_openai_itself_still_needs_a_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_BASE_URL", "https://api.openai.com/v1")
    llm = OpenAILlm(model=MODEL)

    with pytest.raises(ModelRequestRejected) as failure:
        await _collect(llm, _request(), stream=False)

    assert "OPENAI_API_KEY" in (failure.value.detail or "")


async def test_an_error_event_inside_a_stream_is_unavailable(
    stub: OpenAIStub, llm: OpenAILlm
) -> None:
    """vLLM reports a failure after the 200 OK as a `data: {"error": ...}` event."""
    stub.reply_stream(
        [chunk({"role": "assistant", "content": "Hi"}), {"error": {"message": "engine died"}}]
    )
    responses = llm.generate_content_async(_request(), stream=True)

    first = await anext(responses)
    with pytest.raises(ModelUnavailable) as failure:
        await anext(responses)

    assert first.partial
    assert failure.value.upstream_status is None
    assert "engine died" in (failure.value.detail or "")
