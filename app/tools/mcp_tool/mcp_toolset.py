"""MCPToolset: the tools of an MCP server as an LlmAgent's tools (ADK's `McpToolset`).

`MCPToolset(connection_params=StdioConnectionParams(...) | SseConnectionParams(...) |
StreamableHTTPConnectionParams(...), tool_filter=, tool_name_prefix=, header_provider=)`; a bare
`StdioServerParameters(...)` is taken too, as ADK takes it (and, like ADK's module, this one
exports the connection-parameter classes, so its samples' imports from here resolve).
The server's tools are listed when an invocation first needs them (the session opens then) and
declared with the server's JSON Schemas; `header_provider(readonly_context)` adds headers per
user (HTTP transports; each distinct set of headers has its own session); `timeout_seconds`
bounds each call (a call cancelled with its invocation sends MCP's cancellation).
"""

import sys
from typing import TextIO

import mcp_types

from app.contexts.readonly import ReadonlyContext
from app.errors import McpToolFailed
from app.tools.base_tool import BaseTool
from app.tools.base_toolset import BaseToolset, ToolPredicate
from app.tools.mcp_tool.mcp_session_manager import (
    ConnectionParams,
    MCPSessionManager,
    SseConnectionParams,
    StdioConnectionParams,
    StdioServerParameters,
    StreamableHTTPConnectionParams,
)
from app.tools.mcp_tool.mcp_tool import HeaderProvider, MCPTool


class MCPToolset(BaseToolset):
    """The tools of one MCP server."""

    def __init__(
        self,
        *,
        connection_params: ConnectionParams | StdioServerParameters,
        tool_filter: ToolPredicate | list[str] | None = None,
        tool_name_prefix: str | None = None,
        errlog: TextIO = sys.stderr,
        header_provider: HeaderProvider | None = None,
        timeout_seconds: float = 60.0,
    ) -> None:
        super().__init__(tool_filter=tool_filter, tool_name_prefix=tool_name_prefix)
        self.connection_params = connection_params
        self._manager = MCPSessionManager(connection_params, errlog=errlog)
        self._header_provider = header_provider
        self._timeout = timeout_seconds

    async def get_tools(self, readonly_context: ReadonlyContext | None = None) -> list[BaseTool]:
        """The server's tools (all pages), those `tool_filter` selects."""
        headers = (
            dict(self._header_provider(readonly_context))
            if self._header_provider is not None and readonly_context is not None
            else None
        )
        try:
            session = await self._manager.create_session(headers)
            listed: list[mcp_types.Tool] = []
            cursor: str | None = None
            while True:
                params = mcp_types.PaginatedRequestParams(cursor=cursor) if cursor else None
                page = await session.list_tools(params=params)
                listed.extend(page.tools)
                cursor = page.next_cursor
                if not cursor:
                    break
        except Exception as error:
            await self._manager.discard(headers)
            raise McpToolFailed(f"Cannot list the MCP server's tools: {error}") from error
        tools: list[BaseTool] = [
            MCPTool(
                mcp_tool=tool,
                mcp_session_manager=self._manager,
                header_provider=self._header_provider,
                timeout=self._timeout,
            )
            for tool in listed
        ]
        return [tool for tool in tools if self._is_tool_selected(tool, readonly_context)]

    async def close(self) -> None:
        """Close the sessions (and end stdio servers)."""
        await self._manager.close()


#: ADK's other spelling.
McpToolset = MCPToolset

__all__ = [
    "MCPSessionManager",
    "MCPToolset",
    "McpToolset",
    "SseConnectionParams",
    "StdioConnectionParams",
    "StdioServerParameters",
    "StreamableHTTPConnectionParams",
]
