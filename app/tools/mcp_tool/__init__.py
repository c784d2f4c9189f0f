"""MCP tools (ADK's `google.adk.tools.mcp_tool`): MCPToolset and its connection parameters."""

from app.tools.mcp_tool.mcp_session_manager import (
    MCPSessionManager,
    SseConnectionParams,
    StdioConnectionParams,
    StdioServerParameters,
    StreamableHTTPConnectionParams,
)
from app.tools.mcp_tool.mcp_tool import MCPTool
from app.tools.mcp_tool.mcp_toolset import MCPToolset, McpToolset

__all__ = [
    "MCPSessionManager",
    "MCPTool",
    "MCPToolset",
    "McpToolset",
    "SseConnectionParams",
    "StdioConnectionParams",
    "StdioServerParameters",
    "StreamableHTTPConnectionParams",
]
