"""ADK's built-in tools import from their ADK module paths with `google.adk` renamed to `app`."""

import importlib

import pytest

from app import tools

_PATHS = [
    ("app.tools.exit_loop_tool", "exit_loop"),
    ("app.tools.transfer_to_agent_tool", "transfer_to_agent"),
    ("app.tools.long_running_tool", "LongRunningFunctionTool"),
]


@pytest.mark.parametrize(("module", "name"), _PATHS)
def test_each_builtin_tool_imports_from_its_adk_path_and_is_the_package_export(
    module: str, name: str
) -> None:
    value = getattr(importlib.import_module(module), name)
    assert getattr(tools, name) is value
