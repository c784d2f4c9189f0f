"""LiteLlm: ADK's LiteLLM model names served by agentd's own backends (no LiteLLM)."""

import pytest

from app.errors import ModelNotServed
from app.models import Claude, Gemini, LiteLlm, LLMRegistry, OpenAILlm
from app.models.llm import LlmRequest


async def _first_call_fails(llm: LiteLlm) -> ModelNotServed:
    with pytest.raises(ModelNotServed) as failure:
        async for _ in llm.generate_content_async(LlmRequest()):
            pass
    return failure.value


def test_openai_and_anthropic_names_go_to_their_own_backends() -> None:
    openai = LiteLlm(model="openai/gpt-4o-mini", api_key="k")
    claude = LiteLlm(model="anthropic/claude-sonnet-5-5", api_key="k")
    gemini = LiteLlm(model="gemini/gemini-2.5-flash", api_key="k")

    assert isinstance(openai.delegate, OpenAILlm)
    assert openai.delegate.provider_model == "gpt-4o-mini"
    assert isinstance(claude.delegate, Claude)
    assert claude.delegate.provider_model == "claude-sonnet-5-5"
    assert isinstance(gemini.delegate, Gemini)
    assert gemini.delegate.model == "gemini-2.5-flash"


def test_ollama_uses_its_default_address_or_litellms_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OLLAMA_API_BASE", raising=False)
    default = LiteLlm(model="ollama_chat/llama3.2").delegate
    assert isinstance(default, OpenAILlm)
    assert (default.base_url, default.provider_model) == ("http://localhost:11434/v1", "llama3.2")
    monkeypatch.setenv("OLLAMA_API_BASE", "http://gpu-box:11434")
    assert LiteLlm(model="ollama/qwen3").delegate.base_url == "http://gpu-box:11434/v1"  # type: ignore[attr-defined]


async def test_vllm_needs_its_base_and_takes_api_base(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HOSTED_VLLM_API_BASE", raising=False)
    unset = await _first_call_fails(LiteLlm(model="hosted_vllm/meta-llama/Llama-3.1-8B-Instruct"))
    assert "HOSTED_VLLM_API_BASE" in (unset.detail or "")
    vllm = LiteLlm(
        model="hosted_vllm/meta-llama/Llama-3.1-8B-Instruct", api_base="http://v:8000/v1"
    )
    assert isinstance(vllm.delegate, OpenAILlm)
    assert vllm.delegate.base_url == "http://v:8000/v1"
    assert vllm.delegate.provider_model == "meta-llama/Llama-3.1-8B-Instruct"


def test_hosted_providers_read_the_keys_litellm_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENROUTER_API_KEY", "or-key")
    routed = LiteLlm(model="openrouter/meta-llama/llama-3.3-70b").delegate
    assert isinstance(routed, OpenAILlm)
    assert (routed.base_url, routed.api_key) == ("https://openrouter.ai/api/v1", "or-key")


def test_azure_takes_its_deployment_endpoint_and_api_version(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AZURE_API_BASE", "https://acme.openai.azure.com")
    monkeypatch.setenv("AZURE_API_KEY", "az-key")
    monkeypatch.setenv("AZURE_API_VERSION", "2025-01-01")
    azure = LiteLlm(model="azure/my-gpt4o").delegate
    assert isinstance(azure, OpenAILlm)
    assert (azure.base_url, azure.api_key, azure.api_version) == (
        "https://acme.openai.azure.com",
        "az-key",
        "2025-01-01",
    )


@pytest.mark.parametrize("name", ["bedrock/anthropic.claude-3", "vertex_ai/gemini-pro", "cohere/x"])
async def test_other_providers_construct_and_fail_each_call_as_model_not_served(name: str) -> None:
    llm = LiteLlm(model=name)  # an ADK app naming it loads
    for _ in range(2):
        failure = await _first_call_fails(llm)
        assert (failure.type, failure.status) == ("model-not-served", 501)
        assert (failure.provider, failure.model, failure.retryable) == (
            name.partition("/")[0],
            name,
            False,
        )


def test_unknown_arguments_are_refused_not_ignored() -> None:
    with pytest.raises(ValueError, match="does not take"):
        LiteLlm(model="openai/gpt-4o", drop_params=True)


def test_the_registry_builds_litellm_for_prefixed_names() -> None:
    llm = LLMRegistry.new_llm("lm_studio/qwen2.5-7b-instruct")
    assert isinstance(llm, LiteLlm)
    assert isinstance(llm.delegate, OpenAILlm)
    assert llm.delegate.base_url == "http://localhost:1234/v1"
