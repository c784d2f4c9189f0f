"""LiteLlm: ADK's LiteLLM-backed model name, routed to agentd's own backends. No LiteLLM.

ADK code writes `LiteLlm(model="<provider>/<model>", **kwargs)`. agentd keeps that spelling and
serves it with the official SDKs: `openai/` (OpenAILlm) and `anthropic/` (Claude) as themselves,
`gemini/` through Gemini, and the OpenAI-compatible providers below through OpenAILlm pointed at
the provider's base URL, reading the same environment variables LiteLLM reads. A name agentd
cannot route (another prefix: bedrock, vertex_ai, cohere, ...; or a local server with no base
URL) still constructs, so an app that names it loads as it does under ADK (where LiteLLM would
only fail when called); each call then fails with `ModelNotServed` (problem `model-not-served`),
saying what is served. No mapping is guessed: `vertex_ai/` also names Claude and Llama on Vertex.
A hosted provider without its key (`OPENROUTER_API_KEY`, ...) and `azure/` without
`AZURE_API_BASE` / `AZURE_API_KEY` / `AZURE_API_VERSION` construct too, and each call fails with
`ModelNotConfigured` (503 `model-not-configured`) naming the variables to set, before anything
is sent with a placeholder key (or, for `azure/`, to OpenAI itself).

ADK's kwargs that matter here: `api_base` (or `base_url`), `api_key`, `api_version` (Azure),
`extra_headers`, `organization`, `timeout`, `max_retries`; others are refused, not ignored.
"""

import os
from collections.abc import AsyncGenerator
from dataclasses import dataclass
from typing import Any

from pydantic import PrivateAttr

from app.errors import ModelNotConfigured, ModelNotServed
from app.models.llm import BaseLlm, LlmRequest, LlmResponse


@dataclass(frozen=True)
class _Compatible:
    """An OpenAI-compatible provider: where it listens and which variables LiteLLM reads."""

    base_url: str | None
    base_url_env: str | None
    api_key_env: str | None
    default_key: str | None = None
    base_suffix: str = ""


_COMPATIBLE: dict[str, _Compatible] = {
    "ollama_chat": _Compatible("http://localhost:11434", "OLLAMA_API_BASE", None, "ollama", "/v1"),
    "ollama": _Compatible("http://localhost:11434", "OLLAMA_API_BASE", None, "ollama", "/v1"),
    "hosted_vllm": _Compatible(None, "HOSTED_VLLM_API_BASE", "HOSTED_VLLM_API_KEY", "EMPTY"),
    "lm_studio": _Compatible(
        "http://localhost:1234/v1", "LM_STUDIO_API_BASE", "LM_STUDIO_API_KEY", "lm-studio"
    ),
    "openrouter": _Compatible(
        "https://openrouter.ai/api/v1", "OPENROUTER_API_BASE", "OPENROUTER_API_KEY"
    ),
    "groq": _Compatible("https://api.groq.com/openai/v1", "GROQ_API_BASE", "GROQ_API_KEY"),
    "together_ai": _Compatible("https://api.together.xyz/v1", None, "TOGETHERAI_API_KEY"),
    "deepseek": _Compatible("https://api.deepseek.com/v1", "DEEPSEEK_API_BASE", "DEEPSEEK_API_KEY"),
    "mistral": _Compatible("https://api.mistral.ai/v1", "MISTRAL_API_BASE", "MISTRAL_API_KEY"),
    "fireworks_ai": _Compatible(
        "https://api.fireworks.ai/inference/v1", "FIREWORKS_API_BASE", "FIREWORKS_AI_API_KEY"
    ),
    "xai": _Compatible("https://api.x.ai/v1", "XAI_API_BASE", "XAI_API_KEY"),
    "perplexity": _Compatible("https://api.perplexity.ai", None, "PERPLEXITYAI_API_KEY"),
    "deepinfra": _Compatible("https://api.deepinfra.com/v1/openai", None, "DEEPINFRA_API_KEY"),
}

_PASSED_ON = {"api_key", "api_version", "extra_headers", "organization", "timeout", "max_retries"}


class LiteLlm(BaseLlm):
    """A `<provider>/<model>` name served by OpenAILlm, Claude or Gemini."""

    _delegate: BaseLlm = PrivateAttr()

    def __init__(self, model: str, **kwargs: Any) -> None:
        super().__init__(model=model)
        try:
            self._delegate = _route(model, dict(kwargs))
        except ModelNotConfigured as error:
            self._delegate = _Unserved(
                model=model, reason=error.detail or "", variables=error.variables
            )
        except ModelNotServed as error:
            self._delegate = _Unserved(model=model, reason=error.detail or "")

    @property
    def delegate(self) -> BaseLlm:
        """The backend that answers."""
        return self._delegate

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        """The routed backend's answer."""
        request = llm_request.model_copy(update={"model": self._delegate.model})
        async for response in self._delegate.generate_content_async(request, stream=stream):
            yield response


class _Unserved(BaseLlm):
    """The backend of a name agentd cannot route: every call fails with `ModelNotServed`, or
    with `ModelNotConfigured` when setting `variables` would route it."""

    reason: str
    variables: list[str] | None = None

    async def generate_content_async(
        self,
        llm_request: LlmRequest,  # noqa: ARG002 - the port's signature
        stream: bool = False,  # noqa: ARG002
    ) -> AsyncGenerator[LlmResponse, None]:
        """Never answers: raises `ModelNotServed` (or `ModelNotConfigured`)."""
        provider = self.model.partition("/")[0]
        if self.variables is not None:
            raise ModelNotConfigured(
                self.reason, provider=provider, model=self.model, variables=self.variables
            )
        raise ModelNotServed(self.reason, provider=provider, model=self.model)
        yield  # an async generator, as the port requires


def _route(model: str, kwargs: dict[str, Any]) -> BaseLlm:
    provider, _, name = model.partition("/")
    if not name:
        raise ValueError(f"LiteLlm needs '<provider>/<model>', got {model!r}.")
    base_url = kwargs.pop("api_base", None) or kwargs.pop("base_url", None)
    unknown = set(kwargs) - _PASSED_ON
    if unknown:
        raise ValueError(f"LiteLlm on agentd does not take {sorted(unknown)} (model {model!r}).")
    if provider == "openai":
        from app.models.openai_llm import OpenAILlm

        return OpenAILlm(model=name, base_url=base_url, **kwargs)
    if provider == "azure":
        from app.models.openai_llm import OpenAILlm

        base = base_url or os.environ.get("AZURE_API_BASE")
        key = kwargs.pop("api_key", None) or os.environ.get("AZURE_API_KEY")
        version = kwargs.pop("api_version", None) or os.environ.get("AZURE_API_VERSION")
        _require(
            model,
            {
                "AZURE_API_BASE": ("api_base", base),
                "AZURE_API_KEY": ("api_key", key),
                "AZURE_API_VERSION": ("api_version", version),
            },
        )
        return OpenAILlm(
            model=name,
            base_url=base,
            api_key=key,
            api_version=version,
            **kwargs,
        )
    if provider == "anthropic":
        from app.models.anthropic_llm import Claude

        kwargs.pop("organization", None)
        kwargs.pop("api_version", None)
        return Claude(model=name, base_url=base_url, **kwargs)
    if provider == "gemini":
        from app.models.gemini import Gemini

        return Gemini(model=name, base_url=base_url, api_key=kwargs.get("api_key"))
    spec = _COMPATIBLE.get(provider)
    if spec is None:
        served = ", ".join(["openai", "azure", "anthropic", "gemini", *sorted(_COMPATIBLE)])
        raise ModelNotServed(
            f"LiteLlm on agentd serves {served}; {provider!r} needs LiteLLM, which agentd does "
            f"not use (model {model!r})."
        )
    from app.models.openai_llm import OpenAILlm

    base = base_url or (os.environ.get(spec.base_url_env) if spec.base_url_env else None)
    if base is None:
        base = spec.base_url
    if base is None:
        raise ModelNotServed(f"LiteLlm {model!r}: set api_base= or {spec.base_url_env}.")
    if spec.base_suffix and not base.rstrip("/").endswith(spec.base_suffix):
        base = base.rstrip("/") + spec.base_suffix
    api_key = kwargs.pop("api_key", None)
    if api_key is None and spec.api_key_env:
        api_key = os.environ.get(spec.api_key_env)
        if spec.default_key is None:  # a hosted provider: nothing is sent without its key
            _require(model, {spec.api_key_env: ("api_key", api_key)})
    return OpenAILlm(model=name, base_url=base, api_key=api_key or spec.default_key, **kwargs)


def _require(model: str, settings: dict[str, tuple[str, str | None]]) -> None:
    """Raise ModelNotConfigured naming the variables still unset; `settings` maps each
    variable to the LiteLlm argument that may replace it and the value found."""
    unset = {variable: argument for variable, (argument, value) in settings.items() if not value}
    if not unset:
        return
    names = list(unset)
    listed = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
    instead = ", ".join(f"{argument}=" for argument in unset.values())
    raise ModelNotConfigured(
        f"LiteLlm {model!r} is not configured: set {listed} in agentd's "
        f"environment and restart it (or pass {instead} to LiteLlm).",
        provider=model.partition("/")[0],
        model=model,
        variables=names,
    )
