# Source: ADK API reference, `google.adk.plugins.base_plugin.BasePlugin` docstring, "Examples: A
#   simple plugin that logs every tool call" (google/adk-python src/google/adk/plugins/base_plugin.py,
#   https://google.github.io/adk-docs/api-reference/python/google-adk.html#google.adk.plugins.BasePlugin)
# Changed: the imports (`google.adk` -> `app`; the docstring example assumes the module's own
#   imports, repeated here), and the docstring's `..` prompts and line wraps undone so it parses.
#   The runner lines stay commented out as in the docstring; the test builds the runner.
from typing import Any

from app.plugins.base_plugin import BasePlugin
from app.tools.base_tool import BaseTool
from app.tools.tool_context import ToolContext

class ToolLoggerPlugin(BasePlugin):
  def __init__(self):
    super().__init__(name="tool_logger")

  async def before_tool_callback(
      self, *, tool: BaseTool, tool_args: dict[str, Any], tool_context: ToolContext
  ):
    print(f"[{self.name}] Calling tool '{tool.name}' with args: {tool_args}")

  async def after_tool_callback(
      self, *, tool: BaseTool, tool_args: dict, tool_context: ToolContext, result: dict
  ):
    print(f"[{self.name}] Tool '{tool.name}' finished with result: {result}")

# Add the plugin to ADK Runner
# runner = Runner(
#     ...
#     plugins=[ToolLoggerPlugin(), AgentPolicyPlugin()],
# )
