"""LLMRegistry: which backend serves a model name; the built-in backends join on first use.

Every built-in backend (scripted, Gemini, OpenAI, Anthropic, the LiteLlm router) is registered
by module path and class name and imported only when a name it serves is resolved: their modules
import the model port, which re-exports this registry, so importing them here would be circular,
and an app that never names `gpt-*` never imports the `openai` SDK. Routes, first match wins:

    gemini-*, projects/.../gemini...    Gemini (google-genai)
    openai/<m>, gpt-*, o1.. o9*, chatgpt-*   OpenAILlm (sent as <m>)
    anthropic/<m>, claude-*             Claude (sent as <m>)
    ollama_chat/, ollama/, hosted_vllm/, lm_studio/, openrouter/, azure/, groq/, together_ai/,
    deepseek/, mistral/, fireworks_ai/, xai/, perplexity/, deepinfra/ <m>
                                        LiteLlm (an OpenAI-compatible server; see lite_llm.py)
    scripted                            the offline ScriptedLlm
"""

import importlib
import re
from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
    from app.models.llm import BaseLlm

#: (patterns, module, class) of the backends imported on first use, first match first. Each
#: class's `supported_models()` returns the same patterns (tests/models/test_registry_lazy.py).
_LAZY_BACKENDS: list[tuple[list[str], str, str]] = [
    ([r"scripted(-.*)?"], "app.models.scripted", "ScriptedLlm"),
    (
        [
            r"gemini-.*",
            r"projects/.+/locations/.+/endpoints/.+",
            r"projects/.+/locations/.+/publishers/google/models/gemini.+",
        ],
        "app.models.gemini",
        "Gemini",
    ),
    (
        [r"openai/.+", r"gpt-.*", r"o[1-9](?:-.*)?", r"chatgpt-.*"],
        "app.models.openai_llm",
        "OpenAILlm",
    ),
    ([r"anthropic/.+", r"claude-.*"], "app.models.anthropic_llm", "Claude"),
    (
        [
            r"(?:ollama_chat|ollama|hosted_vllm|lm_studio|openrouter|azure|groq|together_ai"
            r"|deepseek|mistral|fireworks_ai|xai|perplexity|deepinfra)/.+"
        ],
        "app.models.lite_llm",
        "LiteLlm",
    ),
]


class LLMRegistry:
    """Maps model names to backends (first matching regex wins; latest registration first)."""

    _backends: ClassVar[list[tuple[re.Pattern[str], "type[BaseLlm] | tuple[str, str]"]]] = []

    @classmethod
    def register(cls, backend: type["BaseLlm"]) -> None:
        """Serve the names `backend.supported_models()` matches with `backend`."""
        for pattern in backend.supported_models():
            cls._backends.insert(0, (re.compile(pattern), backend))

    @classmethod
    def register_lazy(cls, patterns: list[str], module: str, name: str) -> None:
        """Serve `patterns` with class `name` of `module`, imported when first needed."""
        for pattern in patterns:
            cls._backends.insert(0, (re.compile(pattern), (module, name)))

    @classmethod
    def resolve(cls, model: str) -> type["BaseLlm"]:
        """The backend class for `model`, or ValueError."""
        for index, (pattern, backend) in enumerate(cls._backends):
            if not pattern.fullmatch(model):
                continue
            if isinstance(backend, tuple):
                module, name = backend
                loaded: type[BaseLlm] = getattr(importlib.import_module(module), name)
                cls._backends[index] = (pattern, loaded)
                return loaded
            return backend
        raise ValueError(f"No model backend serves {model!r}.")

    @classmethod
    def new_llm(cls, model: str) -> "BaseLlm":
        """A backend instance for `model`."""
        return cls.resolve(model)(model=model)


for _patterns, _module, _name in reversed(_LAZY_BACKENDS):
    LLMRegistry.register_lazy(_patterns, _module, _name)
