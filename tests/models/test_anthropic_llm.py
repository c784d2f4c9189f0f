"""The Claude backend through the real `anthropic` client, against the local `AnthropicStub`.

The first tests are issue 17's acceptance 1 for Anthropic, each through an LlmAgent and a
Runner (on the database-backed services where the stored events matter); the rest pin the
request and response mapping one field at a time.
"""

import asyncio
import base64
import json
import socket
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from anthropic import AsyncAnthropic
from google.genai import types
from pydantic import BaseModel

from app.agents import LlmAgent
from app.agents.callback_context import CallbackContext
from app.contexts.invocation import RunConfig, StreamingMode
from app.errors import ModelRateLimited, ModelRequestRejected, ModelUnavailable
from app.invocations.runner import Runner
from app.models.anthropic_llm import Claude
from app.models.llm import LlmRequest, LlmResponse
from app.runners import InMemoryRunner
from tests.anthropic_stub import (
    AnthropicStub,
    message,
    text_block,
    thinking_block,
)
from tests.engine import conftest as engine_fixtures
from tests.engine.conftest import Services
from tests.engine.helpers import run_turn, text_response, texts

# The database-backed services of the engine tests (SQLite, plain SQLite and PostgreSQL).
services = engine_fixtures.services

MODEL = "claude-sonnet-4-6"


def get_capital_city(country: str) -> str:
    """Retrieves the capital city of a given country."""
    return {"france": "Paris", "japan": "Tokyo"}.get(country.lower(), "unknown")


@pytest.fixture
def stub() -> Iterator[AnthropicStub]:
    """A started Messages API stub."""
    with AnthropicStub() as server:
        yield server


@pytest.fixture
async def claude(stub: AnthropicStub) -> AsyncIterator[Claude]:
    """The Claude backend pointed at the stub (routing prefix included, as the registry sees it)."""
    backend = Claude(model=f"anthropic/{MODEL}", api_key="test-key", base_url=stub.base_url)
    yield backend
    await backend.aclose()


async def _memory_runner(agent: LlmAgent) -> Runner:
    runner = InMemoryRunner(agent=agent, app_name="app")
    await runner.session_service.create_session(app_name="app", user_id="u", session_id="s")
    return runner


async def _services_runner(services: Services, agent: LlmAgent) -> Runner:
    await services.sessions.create_session(app_name="app", user_id="u", session_id="s")
    return services.runner(agent)


def _sent_messages(stub: AnthropicStub, index: int) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = stub.requests[index]["body"]["messages"]
    return messages


# --- issue 17, acceptance 1 ----------------------------------------------------------------


async def test_claude_plain_text_answer(
    services: Services, stub: AnthropicStub, claude: Claude
) -> None:
    stub.reply_text("Hello from Claude.")
    agent = LlmAgent(name="greeter", model=claude, instruction="Be brief.")
    runner = await _services_runner(services, agent)

    events = await run_turn(runner, "Hello?")

    assert texts(events) == ["Hello?", "Hello from Claude."]
    assert events[-1].model_version == "claude-stub-1"
    [request] = stub.requests
    assert request["path"] == "/v1/messages"
    assert request["headers"]["authorization"] == "Bearer test-key"
    body = request["body"]
    assert body["model"] == MODEL  # the anthropic/ routing prefix is not sent
    assert body["system"].startswith("Be brief.")
    assert body["max_tokens"] == 8192
    assert body["messages"] == [{"role": "user", "content": [{"type": "text", "text": "Hello?"}]}]
    assert "stream" not in body


async def test_claude_function_call_round_trip(
    services: Services, stub: AnthropicStub, claude: Claude
) -> None:
    stub.reply_tool_use(("toolu_01", "get_capital_city", {"country": "France"}))
    stub.reply_text("The capital of France is Paris.")
    agent = LlmAgent(
        name="capital", model=claude, instruction="Find capitals.", tools=[get_capital_city]
    )
    runner = await _services_runner(services, agent)

    events = await run_turn(runner, "What is the capital of France?")

    assert texts(events) == ["What is the capital of France?", "The capital of France is Paris."]
    [call] = [c for e in events for c in e.get_function_calls()]
    assert (call.id, call.name, call.args) == (
        "toolu_01",
        "get_capital_city",
        {"country": "France"},
    )
    [answer] = [r for e in events for r in e.get_function_responses()]
    assert (answer.id, answer.response) == ("toolu_01", {"result": "Paris"})
    first = stub.requests[0]
    assert len(stub.requests) == 2
    [tool] = first["body"]["tools"]
    assert tool["name"] == "get_capital_city"
    assert tool["description"].startswith("Retrieves the capital city")
    assert tool["input_schema"]["type"] == "object"
    assert set(tool["input_schema"]["properties"]) == {"country"}
    assert _sent_messages(stub, 1) == [
        {
            "role": "user",
            "content": [{"type": "text", "text": "What is the capital of France?"}],
        },
        {
            "role": "assistant",
            "content": [
                {
                    "type": "tool_use",
                    "id": "toolu_01",
                    "name": "get_capital_city",
                    "input": {"country": "France"},
                }
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_01", "content": '{"result": "Paris"}'}
            ],
        },
    ]
    stored = await services.sessions.get_session(app_name="app", user_id="u", session_id="s")
    assert stored is not None
    assert texts(stored.events)[-1] == "The capital of France is Paris."


async def test_claude_two_parallel_tool_calls_in_one_step(
    stub: AnthropicStub, claude: Claude
) -> None:
    stub.reply_tool_use(
        ("toolu_fr", "get_capital_city", {"country": "France"}),
        ("toolu_jp", "get_capital_city", {"country": "Japan"}),
        text="Looking both up.",
    )
    stub.reply_text("Paris and Tokyo.")
    agent = LlmAgent(name="capital", model=claude, tools=[get_capital_city])
    runner = await _memory_runner(agent)

    events = await run_turn(runner, "Capitals of France and Japan?")

    assert texts(events)[-1] == "Paris and Tokyo."
    calls = [c for e in events for c in e.get_function_calls()]
    assert [c.id for c in calls] == ["toolu_fr", "toolu_jp"]
    assistant, answers = _sent_messages(stub, 1)[1:]
    assert [b["type"] for b in assistant["content"]] == ["text", "tool_use", "tool_use"]
    # Both answers go back in one user message, each naming its tool_use.
    assert answers["role"] == "user"
    assert [(b["tool_use_id"], json.loads(b["content"])) for b in answers["content"]] == [
        ("toolu_fr", {"result": "Paris"}),
        ("toolu_jp", {"result": "Tokyo"}),
    ]


async def test_claude_streaming_yields_partials_but_stores_only_the_final(
    services: Services, stub: AnthropicStub, claude: Claude
) -> None:
    stub.reply_stream(["Hel", "lo ", "world"])
    agent = LlmAgent(name="streamer", model=claude)
    runner = await _services_runner(services, agent)

    events = await run_turn(runner, "hi", run_config=RunConfig(streaming_mode=StreamingMode.SSE))

    assert stub.requests[0]["body"]["stream"] is True
    partials = [e for e in events if e.partial]
    assert texts(partials) == ["Hel", "lo ", "world"]
    assert all(e.seq is None for e in partials)
    final = events[-1]
    assert not final.partial
    assert texts([final]) == ["Hello world"]
    assert final.finish_reason == types.FinishReason.STOP
    stored = await services.sessions.get_session(app_name="app", user_id="u", session_id="s")
    assert stored is not None
    assert texts(stored.events) == ["hi", "Hello world"]
    assert [e.id for e in stored.events].count(final.id) == 1


async def test_claude_streamed_tool_call_is_assembled_before_it_is_issued(
    stub: AnthropicStub, claude: Claude
) -> None:
    stub.reply_tool_use(("toolu_s", "get_capital_city", {"country": "France"}), text="Checking.")
    stub.reply_stream(["Paris", "."])
    agent = LlmAgent(name="capital", model=claude, tools=[get_capital_city])
    runner = await _memory_runner(agent)

    events = await run_turn(
        runner, "France?", run_config=RunConfig(streaming_mode=StreamingMode.SSE)
    )

    # The input JSON came in ~10-character deltas; no partial event carries a call.
    assert not [c for e in events if e.partial for c in e.get_function_calls()]
    [call] = [c for e in events for c in e.get_function_calls()]
    assert (call.id, call.args) == ("toolu_s", {"country": "France"})
    assert texts(events)[-1] == "Paris."
    [answer] = _sent_messages(stub, 1)[-1]["content"]
    assert answer["tool_use_id"] == "toolu_s"


async def test_claude_usage_and_finish_reason_on_the_stored_event(
    services: Services, stub: AnthropicStub, claude: Claude
) -> None:
    usage = {
        "input_tokens": 12,
        "output_tokens": 7,
        "cache_read_input_tokens": 100,
        "cache_creation_input_tokens": 3,
    }
    stub.reply_message(message([text_block("Cut sh")], stop_reason="max_tokens", usage=usage))
    agent = LlmAgent(name="agent", model=claude)
    runner = await _services_runner(services, agent)

    await run_turn(runner, "Tell me everything.")

    stored = await services.sessions.get_session(app_name="app", user_id="u", session_id="s")
    assert stored is not None
    answer = stored.events[-1]
    assert answer.finish_reason == types.FinishReason.MAX_TOKENS
    assert answer.model_version == "claude-stub-1"
    assert answer.usage_metadata == types.GenerateContentResponseUsageMetadata(
        prompt_token_count=115,
        candidates_token_count=7,
        total_token_count=122,
        cached_content_token_count=100,
    )


async def test_claude_429_with_retry_after_is_retried_then_answered(
    stub: AnthropicStub, claude: Claude
) -> None:
    stub.reply_error(
        429, "Number of requests has exceeded your rate limit.", headers={"retry-after": "0"}
    )
    stub.reply_text("Answered on the second try.")
    agent = LlmAgent(name="agent", model=claude)
    runner = await _memory_runner(agent)

    events = await run_turn(runner, "hi")

    assert texts(events)[-1] == "Answered on the second try."
    assert len(stub.requests) == 2
    assert [r["headers"]["x-stainless-retry-count"] for r in stub.requests] == ["0", "1"]


async def test_claude_retry_after_in_seconds_is_honoured(stub: AnthropicStub) -> None:
    stub.reply_error(429, "slow down", headers={"retry-after": "0.2"})
    stub.reply_text("ok")
    llm = Claude(model=MODEL, api_key="k", base_url=stub.base_url)

    [response] = await _collect(llm, _request())
    await llm.aclose()

    assert texts_of(response) == ["ok"]
    first, second = stub.requests
    assert second["received_at"] - first["received_at"] >= 0.2


async def test_claude_persistent_500_reaches_on_model_error_callback(
    stub: AnthropicStub, claude: Claude
) -> None:
    # The SDK makes max_retries (2) more attempts, then gives up: three requests in all.
    stub.reply_error(500, "Internal server error", headers={"retry-after": "0.001"}, times=3)
    seen: dict[str, Any] = {}

    def fallback(
        callback_context: CallbackContext, llm_request: LlmRequest, error: Exception
    ) -> LlmResponse:
        del callback_context, llm_request
        seen["error"] = error
        return text_response("Claude is unavailable, try again later.")

    agent = LlmAgent(name="agent", model=claude, on_model_error_callback=fallback)
    runner = await _memory_runner(agent)

    events = await run_turn(runner, "hi")

    assert texts(events)[-1] == "Claude is unavailable, try again later."
    error = seen["error"]
    assert isinstance(error, ModelUnavailable)
    assert (error.provider, error.model, error.upstream_status) == ("anthropic", MODEL, 500)
    assert error.retryable
    assert len(stub.requests) == 3


async def test_claude_persistent_500_without_callback_ends_with_a_typed_error_event(
    services: Services, stub: AnthropicStub, claude: Claude
) -> None:
    stub.reply_error(500, "Internal server error", headers={"retry-after": "0.001"}, times=3)
    agent = LlmAgent(name="agent", model=claude)
    runner = await _services_runner(services, agent)

    # The runner raises an AgentdError as it is (anything else it wraps in InvocationFailed).
    with pytest.raises(ModelUnavailable) as failure:
        await run_turn(runner, "hi")

    assert failure.value.upstream_status == 500
    stored = await services.sessions.get_session(app_name="app", user_id="u", session_id="s")
    assert stored is not None
    last = stored.events[-1]
    assert last.error_code == "model-unavailable"
    assert last.error_message is not None
    assert "Internal server error" in last.error_message


async def test_claude_cancel_mid_stream_closes_the_upstream_connection(
    stub: AnthropicStub, claude: Claude
) -> None:
    chunks = [f"word{i} " for i in range(200)]
    stub.reply_stream(chunks, event_delay=0.02)  # about four seconds if read to the end
    agent = LlmAgent(name="streamer", model=claude)
    runner = await _memory_runner(agent)
    first_chunk = asyncio.Event()

    async def consume() -> None:
        async for event in runner.run_invocation(
            user_id="u",
            session_id="s",
            new_message=types.Content(role="user", parts=[types.Part(text="talk")]),
            run_config=RunConfig(streaming_mode=StreamingMode.SSE),
        ):
            if event.partial:
                first_chunk.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(first_chunk.wait(), timeout=5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    # The stub's next write fails once the client has dropped the connection.
    assert await asyncio.to_thread(stub.abandoned.wait, 5)
    assert not stub.stream_finished.is_set()


async def test_closing_the_stream_early_closes_the_upstream_connection(
    stub: AnthropicStub, claude: Claude
) -> None:
    stub.reply_stream([f"word{i} " for i in range(200)], event_delay=0.02)
    responses = claude.generate_content_async(_request(), stream=True)

    first = await anext(responses)
    # The consumer stops while the generator waits at a yield (no task is cancelled).
    await responses.aclose()

    assert first.partial
    assert await asyncio.to_thread(stub.abandoned.wait, 5)
    assert not stub.stream_finished.is_set()


# --- request mapping -----------------------------------------------------------------------


def _request(*contents: types.Content, **config: Any) -> LlmRequest:
    return LlmRequest(
        contents=list(contents) or [_user("Hi")],
        config=types.GenerateContentConfig(**config),
    )


def _user(*parts: str | types.Part) -> types.Content:
    return types.Content(
        role="user", parts=[types.Part(text=p) if isinstance(p, str) else p for p in parts]
    )


def _model(*parts: str | types.Part) -> types.Content:
    return types.Content(
        role="model", parts=[types.Part(text=p) if isinstance(p, str) else p for p in parts]
    )


async def _collect(llm: Claude, request: LlmRequest, *, stream: bool = False) -> list[LlmResponse]:
    return [response async for response in llm.generate_content_async(request, stream=stream)]


async def _sent_body(llm: Claude, stub: AnthropicStub, request: LlmRequest) -> dict[str, Any]:
    stub.reply_text("ok")
    await _collect(llm, request)
    body: dict[str, Any] = stub.requests[-1]["body"]
    return body


def texts_of(response: LlmResponse) -> list[str | None]:
    assert response.content is not None
    return [part.text for part in response.content.parts or []]


def _calling(mode: types.FunctionCallingConfigMode, *names: str) -> types.ToolConfig:
    return types.ToolConfig(
        function_calling_config=types.FunctionCallingConfig(
            mode=mode, allowed_function_names=list(names) or None
        )
    )


_TOOLS = [
    types.Tool(
        function_declarations=[
            types.FunctionDeclaration(name="alpha", description="First."),
            types.FunctionDeclaration(
                name="beta",
                parameters=types.Schema(
                    type=types.Type.OBJECT,
                    properties={"n": types.Schema(type=types.Type.INTEGER)},
                    required=["n"],
                ),
            ),
            types.FunctionDeclaration(name="gamma", parameters_json_schema={"type": "object"}),
        ]
    )
]


def test_supported_models_and_provider_model() -> None:
    import re

    patterns = [re.compile(p) for p in Claude.supported_models()]
    for name in ("anthropic/claude-opus-4-8", "claude-sonnet-4-6", "claude-3-5-haiku-latest"):
        assert any(p.fullmatch(name) for p in patterns)
    assert not any(p.fullmatch("gpt-4o") for p in patterns)
    assert Claude(model="anthropic/claude-sonnet-4-5").provider_model == "claude-sonnet-4-5"
    assert Claude(model="claude-sonnet-4-6").provider_model == "claude-sonnet-4-6"
    # Only a leading anthropic/ is a routing prefix.
    assert Claude(model="eu/anthropic/claude").provider_model == "eu/anthropic/claude"


async def test_system_instruction_and_max_tokens_default_and_override(
    stub: AnthropicStub, claude: Claude
) -> None:
    request = _request(system_instruction="You are terse.")
    body = await _sent_body(claude, stub, request)
    assert body["system"] == "You are terse."
    assert body["max_tokens"] == 8192

    body = await _sent_body(claude, stub, _request(max_output_tokens=256))
    assert body["max_tokens"] == 256
    assert "system" not in body

    small = Claude(model=MODEL, api_key="k", base_url=stub.base_url, max_tokens=1024)
    body = await _sent_body(small, stub, _request())
    await small.aclose()
    assert body["max_tokens"] == 1024


async def test_a_large_max_tokens_without_streaming_is_streamed_quietly(
    stub: AnthropicStub, claude: Claude
) -> None:
    # The SDK raises ValueError for a non-streaming call this large; the answer still comes.
    stub.reply_stream(["Long ", "answer."])

    responses = await _collect(claude, _request(max_output_tokens=64_000))

    [response] = responses
    assert texts_of(response) == ["Long answer."]
    assert response.partial is None
    body = stub.requests[0]["body"]
    assert (body["stream"], body["max_tokens"]) == (True, 64_000)


async def test_consecutive_same_role_contents_are_merged_and_thoughts_not_sent(
    stub: AnthropicStub, claude: Claude
) -> None:
    call = types.Part(function_call=types.FunctionCall(id="toolu_a", name="alpha", args={"x": 1}))
    answer = types.Part(
        function_response=types.FunctionResponse(
            id="toolu_a", name="alpha", response={"error": "boom"}
        )
    )
    request = _request(
        _user("one"),
        _user("two"),
        _model(types.Part(text="pondering", thought=True), "three"),
        _model(call),
        _user("four"),  # after the tool result in the history, but the API wants it second
        _user(answer),
        _model(types.Part(text="only a thought", thought=True)),
        _user("five"),
    )

    body = await _sent_body(claude, stub, request)

    assert body["messages"] == [
        {
            "role": "user",
            "content": [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "three"},
                {"type": "tool_use", "id": "toolu_a", "name": "alpha", "input": {"x": 1}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_a",
                    "content": '{"error": "boom"}',
                    "is_error": True,
                },
                {"type": "text", "text": "four"},
                {"type": "text", "text": "five"},
            ],
        },
    ]


async def test_inline_images_become_base64_image_blocks(
    stub: AnthropicStub, claude: Claude
) -> None:
    png = b"\x89PNG\r\n\x1a\nfake"
    request = _request(
        _user(
            "What is this?",
            types.Part.from_bytes(data=png, mime_type="image/png"),
            types.Part.from_uri(file_uri="https://example.com/cat.jpg", mime_type="image/jpeg"),
        )
    )

    body = await _sent_body(claude, stub, request)

    [user] = body["messages"]
    assert user["content"][1:] == [
        {
            "type": "image",
            "source": {
                "type": "base64",
                "media_type": "image/png",
                "data": base64.b64encode(png).decode(),
            },
        },
        {"type": "image", "source": {"type": "url", "url": "https://example.com/cat.jpg"}},
    ]


async def test_a_part_claude_cannot_take_is_rejected_not_dropped(
    stub: AnthropicStub, claude: Claude
) -> None:
    audio = types.Part.from_bytes(data=b"RIFF", mime_type="audio/wav")

    with pytest.raises(ModelRequestRejected) as rejected:
        await _collect(claude, _request(_user("Listen:", audio)))

    assert rejected.value.upstream_status is None
    assert stub.requests == []


@pytest.mark.parametrize(
    ("tool_config", "choice", "declared"),
    [
        (None, None, ["alpha", "beta", "gamma"]),
        (
            _calling(types.FunctionCallingConfigMode.AUTO),
            {"type": "auto"},
            ["alpha", "beta", "gamma"],
        ),
        (
            _calling(types.FunctionCallingConfigMode.ANY),
            {"type": "any"},
            ["alpha", "beta", "gamma"],
        ),
        (
            _calling(types.FunctionCallingConfigMode.ANY, "beta"),
            {"type": "tool", "name": "beta"},
            ["beta"],
        ),
        (
            _calling(types.FunctionCallingConfigMode.ANY, "alpha", "gamma"),
            {"type": "any"},
            ["alpha", "gamma"],
        ),
        (
            _calling(types.FunctionCallingConfigMode.NONE),
            {"type": "none"},
            ["alpha", "beta", "gamma"],
        ),
    ],
)
async def test_tools_and_tool_choice(
    stub: AnthropicStub,
    claude: Claude,
    tool_config: types.ToolConfig | None,
    choice: dict[str, Any] | None,
    declared: list[str],
) -> None:
    body = await _sent_body(claude, stub, _request(tools=_TOOLS, tool_config=tool_config))

    assert body.get("tool_choice") == choice
    assert [t["name"] for t in body["tools"]] == declared
    by_name = {t["name"]: t for t in body["tools"]}
    if "alpha" in by_name:
        assert by_name["alpha"] == {
            "name": "alpha",
            "description": "First.",
            "input_schema": {"type": "object", "properties": {}},
        }
    if "beta" in by_name:
        assert by_name["beta"]["input_schema"] == {
            "type": "object",
            "properties": {"n": {"type": "integer"}},
            "required": ["n"],
        }


async def test_stop_sequences_are_sent(stub: AnthropicStub, claude: Claude) -> None:
    body = await _sent_body(claude, stub, _request(stop_sequences=["END", "\n\nHuman:"]))
    assert body["stop_sequences"] == ["END", "\n\nHuman:"]


async def test_sampling_parameters_are_sent_only_on_the_api_version_that_takes_them(
    stub: AnthropicStub, claude: Claude, caplog: pytest.LogCaptureFixture
) -> None:
    body = await _sent_body(claude, stub, _request(temperature=0.2, top_p=0.9, top_k=5))
    assert not {"temperature", "top_p", "top_k"} & set(body)
    assert "not sent" in caplog.text

    pinned = Claude(
        model=MODEL,
        api_key="k",
        base_url=stub.base_url,
        extra_headers={"anthropic-version": "2023-06-01", "x-gateway": "team-a"},
    )
    body = await _sent_body(pinned, stub, _request(temperature=0.2, top_p=0.9))
    await pinned.aclose()
    assert (body["temperature"], body["top_p"]) == (0.2, 0.9)
    headers = stub.requests[-1]["headers"]
    assert headers["anthropic-version"] == "2023-06-01"
    assert headers["x-gateway"] == "team-a"


class CityAnswer(BaseModel):
    """A structured answer."""

    city: str
    country: str


async def test_response_schema_becomes_structured_output_format(
    stub: AnthropicStub, claude: Claude
) -> None:
    request = _request(response_schema=CityAnswer, response_mime_type="application/json")

    body = await _sent_body(claude, stub, request)

    output_format = body["output_config"]["format"]
    assert output_format["type"] == "json_schema"
    schema = output_format["schema"]
    assert set(schema["properties"]) == {"city", "country"}
    assert schema["additionalProperties"] is False  # the SDK's transform_schema made it strict
    assert claude.capabilities.output_schema_with_tools


async def test_environment_variables_configure_the_client(
    stub: AnthropicStub, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "env-key")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", stub.base_url)
    llm = Claude(model=MODEL)

    body = await _sent_body(llm, stub, _request())
    await llm.aclose()

    assert body["model"] == MODEL
    assert stub.requests[-1]["headers"]["authorization"] == "Bearer env-key"


# --- response mapping ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("stop_reason", "finish_reason"),
    [
        ("end_turn", types.FinishReason.STOP),
        ("tool_use", types.FinishReason.STOP),
        ("stop_sequence", types.FinishReason.STOP),
        ("max_tokens", types.FinishReason.MAX_TOKENS),
        ("refusal", types.FinishReason.SAFETY),
        ("pause_turn", types.FinishReason.OTHER),
        ("model_context_window_exceeded", types.FinishReason.OTHER),
    ],
)
async def test_stop_reason_becomes_finish_reason(
    stub: AnthropicStub, claude: Claude, stop_reason: str, finish_reason: types.FinishReason
) -> None:
    stub.reply_text("x", stop_reason=stop_reason)

    [response] = await _collect(claude, _request())

    assert response.finish_reason == finish_reason


async def test_thinking_blocks_become_thought_parts(stub: AnthropicStub, claude: Claude) -> None:
    body = message([thinking_block("Let me think."), text_block("42")])
    stub.reply_message(body)
    stub.reply_message(body)

    [response] = await _collect(claude, _request())
    *partials, final = await _collect(claude, _request(), stream=True)

    for answer in (response, final):
        assert answer.content is not None
        parts = answer.content.parts or []
        assert [(p.text, p.thought) for p in parts] == [("Let me think.", True), ("42", None)]
    assert [
        (p.content.parts[0].text, p.partial) for p in partials if p.content and p.content.parts
    ] == [
        ("Let me think.", True),
        ("4", True),
        ("2", True),
    ]
    assert final.partial is False
    assert final.turn_complete is True


async def test_an_empty_answer_is_an_error_response(stub: AnthropicStub, claude: Claude) -> None:
    stub.reply_message(message([], stop_reason="refusal"))

    [response] = await _collect(claude, _request())

    assert response.content is None
    assert response.error_code == "refusal"
    assert response.finish_reason == types.FinishReason.SAFETY


# --- errors --------------------------------------------------------------------------------


async def test_a_bad_request_is_rejected_without_retries(
    stub: AnthropicStub, claude: Claude
) -> None:
    stub.reply_error(400, "messages: roles must alternate")

    with pytest.raises(ModelRequestRejected) as rejected:
        await _collect(claude, _request())

    error = rejected.value
    assert (error.provider, error.model, error.upstream_status) == ("anthropic", MODEL, 400)
    assert not error.retryable
    assert "roles must alternate" in (error.detail or "")
    assert error.__cause__ is not None
    assert len(stub.requests) == 1


async def test_overloaded_529_is_unavailable(stub: AnthropicStub) -> None:
    stub.reply_error(529, "Overloaded")
    llm = Claude(model=MODEL, api_key="k", base_url=stub.base_url, max_retries=0)

    with pytest.raises(ModelUnavailable) as unavailable:
        await _collect(llm, _request())
    await llm.aclose()

    assert unavailable.value.upstream_status == 529


async def test_rate_limit_after_the_retries_is_rate_limited(stub: AnthropicStub) -> None:
    stub.reply_error(429, "Slow down", headers={"retry-after": "0.001"}, times=2)
    llm = Claude(model=MODEL, api_key="k", base_url=stub.base_url, max_retries=1)

    with pytest.raises(ModelRateLimited) as limited:
        await _collect(llm, _request(), stream=True)
    await llm.aclose()

    assert limited.value.upstream_status == 429
    assert len(stub.requests) == 2


async def test_an_error_event_mid_stream_is_typed_by_its_error_type(
    stub: AnthropicStub, claude: Claude
) -> None:
    start = message([], stop_reason=None)
    stub.reply_events(
        [
            ("message_start", {"type": "message_start", "message": start}),
            (
                "content_block_start",
                {"type": "content_block_start", "index": 0, "content_block": text_block("")},
            ),
            (
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "text_delta", "text": "Hi"},
                },
            ),
            (
                "error",
                {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
            ),
        ]
    )

    responses: list[LlmResponse] = []

    async def consume() -> None:
        async for response in claude.generate_content_async(_request(), stream=True):
            responses.append(response)

    with pytest.raises(ModelUnavailable) as unavailable:
        await consume()

    assert [texts_of(r) for r in responses] == [["Hi"]]
    # The HTTP status was 200: the error came inside the stream.
    assert unavailable.value.upstream_status is None


async def test_a_stream_that_breaks_off_is_unavailable(stub: AnthropicStub, claude: Claude) -> None:
    start = message([], stop_reason=None)
    stub.reply_events(
        [
            ("message_start", {"type": "message_start", "message": start}),
            (
                "content_block_start",
                {"type": "content_block_start", "index": 0, "content_block": text_block("")},
            ),
        ],
        hang_up=True,
    )

    with pytest.raises(ModelUnavailable) as unavailable:
        await _collect(claude, _request(), stream=True)

    assert unavailable.value.upstream_status is None
    assert unavailable.value.__cause__ is not None


async def test_code_execution_parts_are_sent_as_text(stub: AnthropicStub, claude: Claude) -> None:
    code = types.Part(
        executable_code=types.ExecutableCode(code="print(1 + 1)", language=types.Language.PYTHON)
    )
    result = types.Part(
        code_execution_result=types.CodeExecutionResult(
            outcome=types.Outcome.OUTCOME_OK, output="2"
        )
    )

    body = await _sent_body(claude, stub, _request(_user("Add."), _model(code), _user(result)))

    assert [m["content"] for m in body["messages"][1:]] == [
        [{"type": "text", "text": "```python\nprint(1 + 1)\n```"}],
        [{"type": "text", "text": "Code execution result:\n2"}],
    ]


async def test_connection_refused_is_unavailable() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    llm = Claude(model=MODEL, api_key="k", base_url=f"http://127.0.0.1:{port}", max_retries=0)

    with pytest.raises(ModelUnavailable) as unavailable:
        await _collect(llm, _request())
    await llm.aclose()

    assert unavailable.value.upstream_status is None


async def test_the_client_is_lazy_and_reopens_after_aclose(stub: AnthropicStub) -> None:
    llm = Claude(model=MODEL, api_key="k", base_url=stub.base_url)
    assert llm._client is None
    stub.reply_text("one")
    stub.reply_text("two")

    first = await _collect(llm, _request())
    await llm.aclose()
    assert llm._client is None
    second = await _collect(llm, _request())
    await llm.aclose()

    assert [texts_of(r) for r in first + second] == [["one"], ["two"]]


async def test_a_client_of_ones_own_is_used_and_left_open(stub: AnthropicStub) -> None:
    own = AsyncAnthropic(api_key="own-key", base_url=stub.base_url, max_retries=0)
    llm = Claude(model=MODEL, client=own)
    stub.reply_text("mine")

    [response] = await _collect(llm, _request())
    await llm.aclose()

    assert texts_of(response) == ["mine"]
    assert stub.requests[0]["headers"]["authorization"] == "Bearer own-key"
    assert not own.is_closed()
    await own.close()
