"""The registry routes the names the offline and Gemini backends say they serve to them, though it
imports neither up front (their modules import the port that re-exports the registry)."""

import importlib

import pytest

from app.models.registry import _LAZY_BACKENDS, LLMRegistry

BUILT_IN = {"app.models.scripted": "ScriptedLlm", "app.models.gemini": "Gemini"}


@pytest.mark.parametrize(("module", "name"), BUILT_IN.items())
def test_a_built_in_route_lists_its_backends_supported_models(module: str, name: str) -> None:
    (patterns,) = [p for p, m, n in _LAZY_BACKENDS if (m, n) == (module, name)]
    backend = getattr(importlib.import_module(module), name)
    assert patterns == backend.supported_models()


@pytest.mark.parametrize(
    ("model", "name"), [("scripted", "ScriptedLlm"), ("gemini-2.5-flash", "Gemini")]
)
def test_a_built_in_name_resolves_to_its_backend(model: str, name: str) -> None:
    assert LLMRegistry.resolve(model).__name__ == name
