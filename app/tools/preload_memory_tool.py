"""preload_memory: before every model call, the user's remembered conversations that match
the user's message go into the system instruction (the model need not ask for them)."""

from typing import TYPE_CHECKING, Any

from google.genai import types

from app.contexts.tool import ToolContext
from app.tools.base_tool import BaseTool

if TYPE_CHECKING:
    from app.models.llm import LlmRequest


class PreloadMemoryTool(BaseTool):
    """Adds matching memories to the request (ADK's PreloadMemoryTool); never declared."""

    def __init__(self) -> None:
        super().__init__(name="preload_memory", description="preload_memory")

    async def process_llm_request(
        self, *, tool_context: ToolContext, llm_request: "LlmRequest"
    ) -> None:
        """Search memory with the user's message; list what matched as past conversations."""
        content = tool_context.user_content
        parts = content.parts if content is not None else None
        if not parts or not parts[0].text:
            return
        response = await tool_context.search_memory(parts[0].text)
        lines: list[str] = []
        for memory in response.memories:
            if memory.timestamp:
                lines.append(f"Time: {memory.timestamp}")
            text = _content_text(memory.content)
            if text:
                lines.append(f"{memory.author or 'unknown'}: {text}")
        if not lines:
            return
        memory_text = "\n".join(lines)
        llm_request.append_instructions(
            [
                "The following content is from your previous conversations with the user.\n"
                "They may be useful for answering the user's current query.\n"
                f"<PAST_CONVERSATIONS>\n{memory_text}\n</PAST_CONVERSATIONS>\n"
            ]
        )

    async def run_async(self, *, args: dict[str, Any], tool_context: ToolContext) -> Any:
        """Never called: the tool is not declared to the model."""
        del args, tool_context
        raise NotImplementedError("preload_memory only shapes the model request.")


def _content_text(content: types.Content) -> str:
    shown: list[str] = []
    for part in content.parts or []:
        if part.text:
            shown.append(part.text)
        elif part.function_call is not None:
            shown.append(f"[Function Call: {part.function_call.name}({part.function_call.args})]")
        elif part.function_response is not None:
            response = part.function_response
            shown.append(f"[Function Response: {response.name} -> {response.response}]")
        elif part.inline_data is not None:
            shown.append(f"[Data: {part.inline_data.mime_type or 'unknown type'}]")
    return " ".join(shown)


preload_memory_tool = PreloadMemoryTool()
