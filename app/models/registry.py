"""LLMRegistry: which backend serves a model name; the built-in backends join on first use.

The built-ins (Gemini, the scripted model) are registered when a name is first resolved, not at
import: their modules import the model port, which re-exports this registry, so importing them
here up front would be circular. For the same reason the port is named here only for types.
"""

import re
from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
    from app.models.llm import BaseLlm


class LLMRegistry:
    """Maps model names to backends (first matching regex wins; latest registration first)."""

    _backends: ClassVar[list[tuple[re.Pattern[str], type["BaseLlm"]]]] = []

    @classmethod
    def register(cls, backend: type["BaseLlm"]) -> None:
        """Serve the names `backend.supported_models()` matches with `backend`."""
        for pattern in backend.supported_models():
            cls._backends.insert(0, (re.compile(pattern), backend))

    @classmethod
    def resolve(cls, model: str) -> type["BaseLlm"]:
        """The backend class for `model`, or ValueError."""
        _ensure_builtin_backends()
        for pattern, backend in cls._backends:
            if pattern.fullmatch(model):
                return backend
        raise ValueError(f"No model backend serves {model!r}.")

    @classmethod
    def new_llm(cls, model: str) -> "BaseLlm":
        """A backend instance for `model`."""
        return cls.resolve(model)(model=model)


_builtins_loaded = False


def _ensure_builtin_backends() -> None:
    global _builtins_loaded
    if _builtins_loaded:
        return
    _builtins_loaded = True
    from app.models.gemini import Gemini
    from app.models.scripted import ScriptedLlm

    LLMRegistry.register(Gemini)
    LLMRegistry.register(ScriptedLlm)
