"""MCPTool: one tool of an MCP server, called through the toolset's session (ADK's name).

Declared with the server's own JSON Schema. A call's result becomes the function response:
`structuredContent` when the server sends it, else the text of its text blocks under "result";
images, audio and binary resources are saved as artifacts of the session (named
`<tool>-<call id>-<n>.<ext>`) and listed under "artifacts", resource links under "resources".
A result flagged as an error, a session that broke (the server died) or a call past its timeout
raise `McpToolFailed`: it reaches `on_tool_error_callback`, and if no callback answers the model
gets `{"error": ...}` (the broken session is dropped; the next call opens a new one).
"""

import base64
import mimetypes
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import mcp_types
from google.genai import types

from app.contexts.readonly import ReadonlyContext
from app.contexts.tool import ToolContext
from app.errors import McpToolFailed
from app.tools.base_tool import BaseTool

if TYPE_CHECKING:
    from app.tools.mcp_tool.mcp_session_manager import MCPSessionManager

HeaderProvider = Callable[[ReadonlyContext], Mapping[str, str]]


class MCPTool(BaseTool):
    """A tool an MCP server offers."""

    def __init__(
        self,
        *,
        mcp_tool: mcp_types.Tool,
        mcp_session_manager: "MCPSessionManager",
        header_provider: HeaderProvider | None = None,
        timeout: float = 60.0,
    ) -> None:
        super().__init__(name=mcp_tool.name, description=mcp_tool.description or "")
        self.raw_mcp_tool = mcp_tool
        self._manager = mcp_session_manager
        self._header_provider = header_provider
        self._timeout = timeout

    def get_declaration(self) -> types.FunctionDeclaration:
        """The server's input schema, as the server wrote it."""
        return types.FunctionDeclaration(
            name=self.name,
            description=self.description,
            parameters_json_schema=self.raw_mcp_tool.input_schema,
        )

    async def run_async(self, *, args: dict[str, Any], tool_context: ToolContext) -> Any:
        """Call the tool on the server (under its own name, whatever prefix it was given)."""
        headers = dict(self._header_provider(tool_context)) if self._header_provider else None
        try:
            session = await self._manager.create_session(headers)
            result = await session.call_tool(
                self.raw_mcp_tool.name, args, read_timeout_seconds=self._timeout
            )
        except McpToolFailed:
            raise
        except Exception as error:  # the session is no good any more: the next call reopens
            await self._manager.discard(headers)
            raise McpToolFailed(
                f"MCP tool {self.raw_mcp_tool.name!r} could not be called: "
                f"{type(error).__name__}: {error}",
                tool=self.raw_mcp_tool.name,
            ) from error
        if not isinstance(result, mcp_types.CallToolResult):
            raise McpToolFailed(
                f"MCP tool {self.raw_mcp_tool.name!r} answered with a result agentd does not "
                "understand.",
                tool=self.raw_mcp_tool.name,
            )
        if result.is_error:
            raise McpToolFailed(
                _texts(result) or f"MCP tool {self.raw_mcp_tool.name!r} failed.",
                tool=self.raw_mcp_tool.name,
            )
        return await _response(result, self.raw_mcp_tool.name, tool_context)


def _texts(result: mcp_types.CallToolResult) -> str:
    return "\n".join(b.text for b in result.content if isinstance(b, mcp_types.TextContent))


async def _response(
    result: mcp_types.CallToolResult, tool: str, tool_context: ToolContext
) -> dict[str, Any]:
    response: dict[str, Any] = {}
    if isinstance(result.structured_content, dict):
        response.update(result.structured_content)
    elif result.structured_content is not None:
        response["result"] = result.structured_content
    else:
        text = _texts(result)
        if text:
            response["result"] = text
    artifacts: list[dict[str, Any]] = []
    resources: list[dict[str, Any]] = []
    for block in result.content:
        saved = await _save_binary(block, tool, len(artifacts), tool_context)
        if saved is not None:
            artifacts.append(saved)
        elif isinstance(block, mcp_types.ResourceLink):
            resources.append({"uri": str(block.uri), "name": block.name})
        elif isinstance(block, mcp_types.EmbeddedResource) and isinstance(
            block.resource, mcp_types.TextResourceContents
        ):
            resources.append({"uri": str(block.resource.uri), "text": block.resource.text})
    if artifacts:
        response["artifacts"] = artifacts
    if resources:
        response["resources"] = resources
    return response


async def _save_binary(
    block: Any, tool: str, index: int, tool_context: ToolContext
) -> dict[str, Any] | None:
    """Save an image, audio or binary resource block as an artifact; what the model is told."""
    if isinstance(block, mcp_types.ImageContent | mcp_types.AudioContent):
        data, mime_type = block.data, block.mime_type
    elif isinstance(block, mcp_types.EmbeddedResource) and isinstance(
        block.resource, mcp_types.BlobResourceContents
    ):
        data = block.resource.blob
        mime_type = block.resource.mime_type or "application/octet-stream"
    else:
        return None
    extension = mimetypes.guess_extension(mime_type) or ".bin"
    name = f"{tool}-{tool_context.function_call_id or 'call'}-{index}{extension}"
    part = types.Part.from_bytes(data=base64.b64decode(data), mime_type=mime_type)
    version = await tool_context.save_artifact(name, part)
    return {"artifact": name, "version": version, "mimeType": mime_type}
