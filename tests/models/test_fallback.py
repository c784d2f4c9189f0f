"""FallbackModel (issue 17, acceptance 3) and model-name routing in the registry."""

from collections.abc import AsyncGenerator, AsyncIterator, Iterator

import pytest
from google.genai import types
from pydantic import Field

from app.agents import LlmAgent
from app.errors import ModelRequestRejected, ModelUnavailable
from app.invocations.runner import InMemoryRunner
from app.models import FallbackModel, Gemini, LLMRegistry
from app.models.fallback import is_retryable
from app.models.llm import BaseLlm, LlmRequest, LlmResponse
from tests.engine.helpers import run_turn, text_response, texts
from tests.gemini_stub import GeminiStub


class Failing(BaseLlm):
    """A model that raises `error` before answering, counting its calls."""

    model: str = "failing"
    error: Exception
    calls: int = 0

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        del llm_request, stream
        self.calls += 1
        raise self.error
        yield  # pragma: no cover


class Answering(BaseLlm):
    """A model that answers `text` (as two chunks and a final response when streaming)."""

    model: str = "answering"
    text: str = "ok"
    seen_models: list[str | None] = Field(default_factory=list)

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        self.seen_models.append(llm_request.model)
        if stream:
            yield text_response(self.text[:1]).model_copy(update={"partial": True})
        yield text_response(self.text)


async def _runner(model: BaseLlm) -> InMemoryRunner:
    runner = InMemoryRunner(LlmAgent(name="agent", model=model), app_name="app")
    await runner.session_service.create_session(app_name="app", user_id="u", session_id="s")
    return runner


@pytest.fixture
def stubs() -> Iterator[tuple[GeminiStub, GeminiStub]]:
    """Two Gemini API stubs: the primary's and the secondary's provider."""
    with GeminiStub() as first, GeminiStub() as second:
        yield first, second


@pytest.fixture
async def geminis(stubs: tuple[GeminiStub, GeminiStub]) -> AsyncIterator[tuple[Gemini, Gemini]]:
    """Real google-genai backends pointed at the two stubs."""
    first, second = stubs
    primary = Gemini(model="gemini-2.5-pro", api_key="k", base_url=first.base_url)
    secondary = Gemini(model="gemini-2.5-flash", api_key="k", base_url=second.base_url)
    yield primary, secondary
    await primary.aclose()
    await secondary.aclose()


async def test_a_503_from_the_primary_is_answered_by_the_secondary_and_the_event_says_so(
    stubs: tuple[GeminiStub, GeminiStub], geminis: tuple[Gemini, Gemini]
) -> None:
    first, second = stubs
    first.reply_error(503, "overloaded")
    second.reply_text("from the secondary")
    runner = await _runner(FallbackModel(models=list(geminis)))

    events = await run_turn(runner, "hi")

    final = events[-1]
    assert texts([final]) == ["from the secondary"]
    assert final.custom_metadata is not None
    fallback = final.custom_metadata["fallback"]
    assert fallback["model"] == "gemini-2.5-flash"
    assert fallback["index"] == 1
    assert [f["model"] for f in fallback["failed"]] == ["gemini-2.5-pro"]
    assert "503" in fallback["failed"][0]["error"]
    assert final.model_version == "gemini-stub"  # the provider's own, when it sends one
    # Each model got the request under its own name.
    assert first.requests[0]["model"] == "gemini-2.5-pro"
    assert second.requests[0]["model"] == "gemini-2.5-flash"
    stored = await runner.session_service.get_session(app_name="app", user_id="u", session_id="s")
    assert stored is not None
    assert stored.events[-1].custom_metadata == final.custom_metadata


async def test_when_every_model_fails_one_typed_error_names_them_all(
    stubs: tuple[GeminiStub, GeminiStub], geminis: tuple[Gemini, Gemini]
) -> None:
    first, second = stubs
    first.reply_error(503, "overloaded")
    second.reply_error(429, "slow down")
    runner = await _runner(FallbackModel(models=list(geminis)))

    with pytest.raises(ModelUnavailable) as failure:
        await run_turn(runner, "hi")

    assert failure.value.type == "model-unavailable"
    assert "gemini-2.5-pro, gemini-2.5-flash" in (failure.value.detail or "")
    stored = await runner.session_service.get_session(app_name="app", user_id="u", session_id="s")
    assert stored is not None
    assert stored.events[-1].error_code == "model-unavailable"


async def test_a_non_retryable_failure_is_raised_without_trying_the_next_model() -> None:
    rejected = Failing(
        error=ModelRequestRejected("bad request", provider="p", model="m", status=400)
    )
    secondary = Answering()
    runner = await _runner(FallbackModel(models=[rejected, secondary]))

    with pytest.raises(ModelRequestRejected):
        await run_turn(runner, "hi")

    assert rejected.calls == 1
    assert secondary.seen_models == []


async def test_streaming_falls_back_before_the_first_chunk_only() -> None:
    secondary = Answering(text="hello")
    chain = FallbackModel(
        models=[Failing(error=ModelUnavailable("down", provider="p", model="m")), secondary]
    )
    request = LlmRequest(
        model="fallback", contents=[types.Content(role="user", parts=[types.Part(text="hi")])]
    )

    responses = [r async for r in chain.generate_content_async(request, stream=True)]

    assert [r.partial for r in responses] == [True, None]
    assert secondary.seen_models == ["answering"]
    assert all(r.custom_metadata and r.custom_metadata["fallback"]["index"] == 1 for r in responses)


def test_models_may_be_named_and_are_resolved_through_the_registry() -> None:
    chain = FallbackModel(models=["gemini-2.5-flash", "scripted"])
    assert [type(m).__name__ for m in chain.models] == ["Gemini", "ScriptedLlm"]
    with pytest.raises(ValueError, match="at least 1"):
        FallbackModel(models=[])


@pytest.mark.parametrize(
    ("error", "retryable"),
    [
        (ModelUnavailable("x"), True),
        (ModelRequestRejected("x"), False),
        (TimeoutError(), True),
        (ConnectionError(), True),
        (ValueError("a bug"), False),
    ],
)
def test_which_failures_move_on_to_the_next_model(error: Exception, retryable: bool) -> None:
    assert is_retryable(error) is retryable


@pytest.mark.parametrize(
    ("name", "backend"),
    [
        ("gemini-2.5-flash", "Gemini"),
        ("scripted", "ScriptedLlm"),
        ("openai/gpt-4o-mini", "OpenAILlm"),
        ("gpt-4o", "OpenAILlm"),
        ("o3-mini", "OpenAILlm"),
        ("o1", "OpenAILlm"),
        ("anthropic/claude-sonnet-5-5", "Claude"),
        ("claude-3-5-haiku-latest", "Claude"),
        ("ollama_chat/llama3.2", "LiteLlm"),
        ("hosted_vllm/meta-llama/Llama-3.1-8B-Instruct", "LiteLlm"),
    ],
)
def test_model_names_route_to_their_backend(name: str, backend: str) -> None:
    assert LLMRegistry.resolve(name).__name__ == backend


def test_an_unknown_model_name_fails_clearly() -> None:
    with pytest.raises(ValueError, match="No model backend serves 'bedrock/claude'"):
        LLMRegistry.resolve("bedrock/claude")


async def test_a_failing_openai_model_falls_back_to_claude_across_providers() -> None:
    from app.models import Claude, OpenAILlm
    from tests.anthropic_stub import AnthropicStub
    from tests.openai_stub import OpenAIStub

    with OpenAIStub() as openai_stub, AnthropicStub() as anthropic_stub:
        openai_stub.reply_error(503, "overloaded")
        anthropic_stub.reply_text("Claude answers.")
        primary = OpenAILlm(
            model="openai/gpt-4o-mini", api_key="k", base_url=openai_stub.base_url, max_retries=0
        )
        secondary = Claude(model="claude-sonnet-5-5", api_key="k", base_url=anthropic_stub.base_url)
        runner = await _runner(FallbackModel(models=[primary, secondary]))

        events = await run_turn(runner, "hi")

        assert texts([events[-1]]) == ["Claude answers."]
        assert events[-1].custom_metadata is not None
        fallback = events[-1].custom_metadata["fallback"]
        assert (fallback["model"], fallback["index"]) == ("claude-sonnet-5-5", 1)
        assert fallback["failed"][0]["error"].startswith("model-unavailable")
        assert len(openai_stub.requests) == 1
