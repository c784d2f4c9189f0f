"""ADK's built-in tools import from their ADK module paths with `google.adk` renamed to `app`."""

import importlib

import pytest

from app import tools
from app.tools.base_tool import BaseTool

# (module, the name ADK defines there, the name `app.tools` exports it under)
_PATHS = [
    ("app.tools.exit_loop_tool", "exit_loop", "exit_loop"),
    ("app.tools.transfer_to_agent_tool", "transfer_to_agent", "transfer_to_agent"),
    ("app.tools.long_running_tool", "LongRunningFunctionTool", "LongRunningFunctionTool"),
    ("app.tools.get_user_choice_tool", "get_user_choice_tool", "get_user_choice"),
    ("app.tools.load_artifacts_tool", "load_artifacts_tool", "load_artifacts"),
    ("app.tools.load_memory_tool", "load_memory_tool", "load_memory"),
    ("app.tools.preload_memory_tool", "preload_memory_tool", "preload_memory"),
    ("app.tools.google_search_tool", "google_search", "google_search"),
    ("app.tools.example_tool", "ExampleTool", "ExampleTool"),
]
# Module-level names ADK defines beside the tool instances.
_ALSO = [
    ("app.tools.get_user_choice_tool", "get_user_choice"),
    ("app.tools.load_artifacts_tool", "LoadArtifactsTool"),
    ("app.tools.load_memory_tool", "load_memory"),
    ("app.tools.load_memory_tool", "LoadMemoryTool"),
    ("app.tools.preload_memory_tool", "PreloadMemoryTool"),
    ("app.tools.google_search_tool", "GoogleSearchTool"),
    ("app.tools.set_model_response_tool", "SetModelResponseTool"),
]


@pytest.mark.parametrize(("module", "name", "exported_as"), _PATHS)
def test_each_builtin_tool_imports_from_its_adk_path_and_is_the_package_export(
    module: str, name: str, exported_as: str
) -> None:
    value = getattr(importlib.import_module(module), name)
    assert getattr(tools, exported_as) is value
    assert exported_as in tools.__all__


@pytest.mark.parametrize(("module", "name"), _ALSO)
def test_the_functions_and_classes_beside_the_tools_import_from_their_adk_paths(
    module: str, name: str
) -> None:
    assert callable(getattr(importlib.import_module(module), name))


def test_the_package_exports_the_long_running_and_memory_tools_as_tools_like_adk() -> None:
    assert isinstance(tools.get_user_choice, BaseTool)
    assert tools.get_user_choice.is_long_running
    assert isinstance(tools.load_memory, BaseTool)
    assert isinstance(tools.load_artifacts, BaseTool)
