"""google_search: Gemini's built-in Google Search grounding, declared on the request.

The model searches by itself; agentd runs nothing and sees only the grounded answer (with its
`groundingMetadata`). Only Gemini 2 and later serve it, so another model fails clearly.
"""

from typing import TYPE_CHECKING, Any

from google.genai import types

from app.contexts.tool import ToolContext
from app.tools.base_tool import BaseTool

if TYPE_CHECKING:
    from app.models.llm import LlmRequest


class GoogleSearchTool(BaseTool):
    """Declares Gemini's google_search tool (google_search_retrieval on Gemini 1)."""

    def __init__(self, *, bypass_multi_tools_limit: bool = False) -> None:
        super().__init__(name="google_search", description="google_search")
        self.bypass_multi_tools_limit = bypass_multi_tools_limit

    async def process_llm_request(
        self, *, tool_context: ToolContext, llm_request: "LlmRequest"
    ) -> None:
        """Add the built-in search tool for the request's Gemini model."""
        del tool_context
        model = llm_request.model or ""
        tools = llm_request.config.tools or []
        if model.startswith("gemini-1"):
            if tools:
                raise ValueError(
                    "Google search tool cannot be used with other tools in Gemini 1.x."
                )
            search = types.Tool(google_search_retrieval=types.GoogleSearchRetrieval())
        elif model.startswith("gemini-"):
            search = types.Tool(google_search=types.GoogleSearch())
        else:
            raise ValueError(f"Google search tool is not supported for model {model}")
        llm_request.config.tools = [*tools, search]

    async def run_async(self, *, args: dict[str, Any], tool_context: ToolContext) -> Any:
        """Never called: the model searches by itself."""
        del args, tool_context
        raise NotImplementedError("google_search runs inside the model.")


google_search = GoogleSearchTool()
