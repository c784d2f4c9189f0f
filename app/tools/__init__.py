"""Tools: FunctionTool, AgentTool and the built-ins, ADK-style."""

from app.tools.agent_tool import AgentTool
from app.tools.base_tool import BaseTool
from app.tools.builtin import exit_loop, transfer_to_agent
from app.tools.function_tool import FunctionTool
from app.tools.long_running_tool import LongRunningFunctionTool
from app.tools.tool_context import ToolContext

__all__ = [
    "AgentTool",
    "BaseTool",
    "FunctionTool",
    "LongRunningFunctionTool",
    "ToolContext",
    "exit_loop",
    "transfer_to_agent",
]
