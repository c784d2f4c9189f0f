"""LLM backends: the BaseLlm port and its messages, the registry, Gemini, OpenAI, Claude,
fallback chains, and the scripted offline model.

`OpenAILlm`, `Claude` and `LiteLlm` are imported on first use (as ADK does), so an app that
uses neither never imports the `openai` or `anthropic` SDK.
"""

import importlib
from typing import TYPE_CHECKING, Any

from app.models.fallback import FallbackModel
from app.models.gemini import Gemini
from app.models.llm import BaseLlm, LlmCapabilities, LlmRequest, LlmResponse
from app.models.registry import LLMRegistry

if TYPE_CHECKING:
    from app.models.anthropic_llm import Claude
    from app.models.lite_llm import LiteLlm
    from app.models.openai_llm import OpenAILlm

_LAZY = {
    "OpenAILlm": "app.models.openai_llm",
    "Claude": "app.models.anthropic_llm",
    "LiteLlm": "app.models.lite_llm",
}

__all__ = [
    "BaseLlm",
    "Claude",
    "FallbackModel",
    "Gemini",
    "LLMRegistry",
    "LiteLlm",
    "LlmCapabilities",
    "LlmRequest",
    "LlmResponse",
    "OpenAILlm",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
