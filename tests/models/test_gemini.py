"""The Gemini backend through the real google-genai client, against the local `GeminiStub`."""

from collections.abc import AsyncIterator, Iterator

import pytest
from google.genai import errors, types

from app.models.gemini import Gemini
from app.models.llm import LLMRegistry, LlmRequest, LlmResponse
from tests.gemini_stub import GeminiStub, function_call_response, text_response

MODEL = "gemini-2.0-flash"


@pytest.fixture
def stub() -> Iterator[GeminiStub]:
    """A started Gemini API stub."""
    with GeminiStub() as server:
        yield server


@pytest.fixture
async def llm(stub: GeminiStub) -> AsyncIterator[Gemini]:
    """A Gemini backend pointed at the stub."""
    backend = Gemini(model=MODEL, api_key="test-key", base_url=stub.base_url)
    yield backend
    await backend.aclose()


def _request(text: str = "Hi") -> LlmRequest:
    return LlmRequest(
        model=MODEL,
        contents=[types.Content(role="user", parts=[types.Part(text=text)])],
    )


async def _collect(llm: Gemini, request: LlmRequest, *, stream: bool) -> list[LlmResponse]:
    return [response async for response in llm.generate_content_async(request, stream=stream)]


def _texts(response: LlmResponse) -> list[str | None]:
    assert response.content is not None
    return [part.text for part in response.content.parts or []]


async def test_text_answer_becomes_one_final_response(stub: GeminiStub, llm: Gemini) -> None:
    stub.reply_text("Hello there!")

    [response] = await _collect(llm, _request(), stream=False)

    assert _texts(response) == ["Hello there!"]
    assert response.content is not None
    assert response.content.role == "model"
    assert response.partial is None
    assert response.error_code is None
    assert response.finish_reason == types.FinishReason.STOP
    assert response.usage_metadata is not None
    assert response.usage_metadata.total_token_count == 15
    assert stub.requests[0]["path"].endswith(f"/models/{MODEL}:generateContent")
    assert stub.requests[0]["headers"]["x-goog-api-key"] == "test-key"


async def test_function_call_answer_carries_name_and_args(stub: GeminiStub, llm: Gemini) -> None:
    stub.reply_function_call("get_weather", {"city": "Paris", "days": 2})

    [response] = await _collect(llm, _request("Weather?"), stream=False)

    assert response.content is not None
    [part] = response.content.parts or []
    assert part.function_call is not None
    assert part.function_call.name == "get_weather"
    assert part.function_call.args == {"city": "Paris", "days": 2}


async def test_request_body_carries_contents_system_instruction_and_tools(
    stub: GeminiStub, llm: Gemini
) -> None:
    stub.reply_text("ok")
    request = _request("What is 2+2?")
    request.append_instructions(["You are terse."])
    request.config.temperature = 0.2
    request.config.tools = [
        types.Tool(
            function_declarations=[
                types.FunctionDeclaration(
                    name="add",
                    description="Add two numbers.",
                    parameters=types.Schema(
                        type=types.Type.OBJECT,
                        properties={
                            "a": types.Schema(type=types.Type.INTEGER),
                            "b": types.Schema(type=types.Type.INTEGER),
                        },
                        required=["a", "b"],
                    ),
                )
            ]
        ),
        types.Tool(),
        types.Tool(function_declarations=[]),
    ]
    request.tools_dict["add"] = object()

    await _collect(llm, request, stream=False)

    body = stub.requests[0]["body"]
    assert body["contents"] == [{"role": "user", "parts": [{"text": "What is 2+2?"}]}]
    assert body["systemInstruction"]["parts"] == [{"text": "You are terse."}]
    assert body["generationConfig"]["temperature"] == 0.2
    [tool] = body["tools"]
    [declaration] = tool["functionDeclarations"]
    assert declaration["name"] == "add"
    assert declaration["description"] == "Add two numbers."
    assert declaration["parameters"]["required"] == ["a", "b"]
    assert "tools_dict" not in body
    assert "toolsDict" not in body
    # The caller's request is left as it was.
    assert len(request.config.tools) == 3


async def test_stream_yields_partials_then_one_final_aggregated_text(
    stub: GeminiStub, llm: Gemini
) -> None:
    stub.reply_stream(["Hel", "lo, ", "world"])

    responses = await _collect(llm, _request(), stream=True)

    *partials, final = responses
    assert [_texts(p) for p in partials] == [["Hel"], ["lo, "], ["world"]]
    assert all(p.partial is True for p in partials)
    assert all(not p.turn_complete for p in partials)
    assert _texts(final) == ["Hello, world"]
    assert final.content is not None
    assert final.content.role == "model"
    assert final.partial is False
    assert final.turn_complete is True
    assert final.finish_reason == types.FinishReason.STOP
    assert final.usage_metadata is not None
    assert final.usage_metadata.total_token_count == 15
    assert stub.requests[0]["path"].endswith(f"/models/{MODEL}:streamGenerateContent")
    assert "alt=sse" in stub.requests[0]["query"]


async def test_stream_with_function_call_ends_with_text_and_call_in_final(
    stub: GeminiStub, llm: Gemini
) -> None:
    stub.reply_events(
        [
            text_response("Let me ", finish_reason=None),
            text_response("check.", finish_reason=None),
            function_call_response("get_weather", {"city": "Oslo"}),
        ]
    )

    responses = await _collect(llm, _request(), stream=True)

    *partials, final = responses
    assert [_texts(p) for p in partials] == [["Let me "], ["check."]]
    assert final.partial is False
    assert final.turn_complete is True
    assert final.content is not None
    text_part, call_part = final.content.parts or []
    assert text_part.text == "Let me check."
    assert call_part.function_call is not None
    assert call_part.function_call.name == "get_weather"
    assert call_part.function_call.args == {"city": "Oslo"}


async def test_empty_stream_yields_one_error_response(stub: GeminiStub, llm: Gemini) -> None:
    stub.reply_events([])

    [response] = await _collect(llm, _request(), stream=True)

    assert response.error_code is not None
    assert response.content is None


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize(
    ("status", "status_name"),
    [(429, "RESOURCE_EXHAUSTED"), (400, "INVALID_ARGUMENT")],
)
async def test_api_error_propagates_with_its_code(
    stub: GeminiStub, llm: Gemini, status: int, status_name: str, stream: bool
) -> None:
    stub.reply_error(status, "Nope.", status_name)

    with pytest.raises(errors.APIError) as raised:
        await _collect(llm, _request(), stream=stream)

    assert raised.value.code == status
    assert raised.value.status == status_name
    assert len(stub.requests) == 1  # no retries


async def test_constructing_a_backend_needs_no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("GOOGLE_API_KEY", "GEMINI_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI"):
        monkeypatch.delenv(name, raising=False)

    backend = Gemini(model=MODEL)

    assert backend.model == MODEL
    await backend.aclose()


async def test_base_url_falls_back_to_environment(
    stub: GeminiStub, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTD_GEMINI_BASE_URL", stub.base_url)
    stub.reply_text("from env")
    backend = Gemini(model=MODEL, api_key="test-key")

    [response] = await _collect(backend, _request(), stream=False)
    await backend.aclose()

    assert _texts(response) == ["from env"]


def test_registry_resolves_gemini_names() -> None:
    assert LLMRegistry.resolve(MODEL) is Gemini
    assert LLMRegistry.resolve("projects/p/locations/us-central1/endpoints/123") is Gemini
    assert (
        LLMRegistry.resolve("projects/p/locations/l/publishers/google/models/gemini-2.5-pro")
        is Gemini
    )


@pytest.mark.parametrize("stream", [False, True])
async def test_blocked_prompt_becomes_an_error_response(
    stub: GeminiStub, llm: Gemini, stream: bool
) -> None:
    stub.reply_json({"promptFeedback": {"blockReason": "SAFETY", "blockReasonMessage": "No."}})

    [response] = await _collect(llm, _request(), stream=stream)

    assert response.error_code == "SAFETY"
    assert response.content is None
