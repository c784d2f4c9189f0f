"""BaseToolset: a source of tools resolved per model request (ADK's `base_toolset`).

A toolset's tools are not known when the agent is defined: an MCP server lists them when asked,
an OpenAPI document is parsed into one tool per operation. An LlmAgent takes toolsets in its
`tools` beside functions and BaseTools and asks each for its tools (`get_tools_with_prefix`)
once per invocation, before the first model call; they then behave as any other tool.
`close()` releases what the toolset holds (sessions, subprocesses); the app registry calls it
when the process shuts down.
"""

from abc import ABC, abstractmethod
from typing import Protocol, runtime_checkable

from app.contexts.readonly import ReadonlyContext
from app.tools.base_tool import BaseTool


@runtime_checkable
class ToolPredicate(Protocol):
    """Decides whether a toolset's tool is exposed (ADK's `ToolPredicate`)."""

    def __call__(self, tool: BaseTool, readonly_context: ReadonlyContext | None = None) -> bool:
        """Whether `tool` is exposed in this context."""


class BaseToolset(ABC):
    """A set of tools an LlmAgent resolves when it runs.

    Args:
        tool_filter: the names of the tools to expose, or a predicate; None exposes them all.
        tool_name_prefix: prepended to every tool's name (with an underscore), so two toolsets
            may offer tools of the same name.
    """

    def __init__(
        self,
        *,
        tool_filter: ToolPredicate | list[str] | None = None,
        tool_name_prefix: str | None = None,
    ) -> None:
        self.tool_filter = tool_filter
        self.tool_name_prefix = tool_name_prefix

    @abstractmethod
    async def get_tools(self, readonly_context: ReadonlyContext | None = None) -> list[BaseTool]:
        """The tools this toolset offers in this context (filtered by `tool_filter`)."""

    async def get_tools_with_prefix(
        self, readonly_context: ReadonlyContext | None = None
    ) -> list[BaseTool]:
        """`get_tools`, each tool renamed `<prefix>_<name>` when the toolset has a prefix."""
        tools = await self.get_tools(readonly_context)
        if not self.tool_name_prefix:
            return tools
        for tool in tools:
            if not tool.name.startswith(f"{self.tool_name_prefix}_"):
                tool.name = f"{self.tool_name_prefix}_{tool.name}"
        return tools

    async def close(self) -> None:
        """Release what the toolset holds (default: nothing)."""
        return None

    def _is_tool_selected(self, tool: BaseTool, readonly_context: ReadonlyContext | None) -> bool:
        """Whether `tool_filter` exposes `tool` (ADK's name)."""
        if self.tool_filter is None:
            return True
        if isinstance(self.tool_filter, list):
            return tool.name in self.tool_filter
        return bool(self.tool_filter(tool, readonly_context))
