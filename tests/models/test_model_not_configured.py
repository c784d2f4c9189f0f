"""A model without credentials in a fallback chain: the chain moves on to the next model, since
another provider may be configured where this one is not."""

import pytest
from google.genai import types

from app.errors import ModelNotConfigured
from app.models import FallbackModel
from app.models.llm import LlmRequest
from app.models.scripted import ScriptedLlm


async def test_a_fallback_chain_skips_a_model_without_credentials(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    chain = FallbackModel(models=["gpt-4o-mini", ScriptedLlm()])
    request = LlmRequest(contents=[types.Content(role="user", parts=[types.Part(text="hi")])])

    (answer,) = [r async for r in chain.generate_content_async(request)]

    fallback = (answer.custom_metadata or {})["fallback"]
    assert (fallback["model"], fallback["index"]) == ("scripted", 1)
    assert fallback["failed"][0]["error"].startswith("model-not-configured: ")
    assert "OPENAI_API_KEY" in fallback["failed"][0]["error"]


async def test_alone_it_is_raised_with_the_variables_to_set(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    chain = FallbackModel(models=["claude-sonnet-4-5"])

    with pytest.raises(ModelNotConfigured) as failure:
        async for _ in chain.generate_content_async(LlmRequest()):
            pass

    assert failure.value.variables == ["ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"]


async def test_a_chain_without_any_credentials_names_every_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "GOOGLE_API_KEY", "GEMINI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("GOOGLE_GENAI_USE_VERTEXAI", raising=False)
    chain = FallbackModel(models=["gpt-4o-mini", "gemini-2.5-flash"])

    with pytest.raises(ModelNotConfigured) as failure:
        async for _ in chain.generate_content_async(LlmRequest()):
            pass

    assert {"OPENAI_API_KEY", "GOOGLE_API_KEY"} <= set(failure.value.variables)
    assert "OPENAI_API_KEY" in (failure.value.detail or "")
    assert "GOOGLE_API_KEY" in (failure.value.detail or "")
