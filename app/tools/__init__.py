"""Tools: FunctionTool, AgentTool and the built-ins, ADK-style."""

from app.tools.agent_tool import AgentTool
from app.tools.base_tool import BaseTool
from app.tools.base_toolset import BaseToolset, ToolPredicate
from app.tools.builtin import exit_loop, transfer_to_agent
from app.tools.example_tool import ExampleTool
from app.tools.function_tool import FunctionTool
from app.tools.get_user_choice_tool import get_user_choice_tool as get_user_choice
from app.tools.google_search_tool import google_search
from app.tools.load_artifacts_tool import load_artifacts_tool as load_artifacts
from app.tools.load_memory_tool import load_memory_tool as load_memory
from app.tools.long_running_tool import LongRunningFunctionTool
from app.tools.preload_memory_tool import preload_memory_tool as preload_memory
from app.tools.tool_confirmation import ToolConfirmation
from app.tools.tool_context import ToolContext

__all__ = [
    "AgentTool",
    "BaseTool",
    "BaseToolset",
    "ExampleTool",
    "FunctionTool",
    "LongRunningFunctionTool",
    "ToolConfirmation",
    "ToolContext",
    "ToolPredicate",
    "exit_loop",
    "get_user_choice",
    "google_search",
    "load_artifacts",
    "load_memory",
    "preload_memory",
    "transfer_to_agent",
]
