"""load_memory: the model searches the user's remembered sessions with a query.

ADK tells the model about its memory in the system instruction, from a request hook LlmAgent
does not call; the same advice rides in this tool's description instead. The package exports the
tool (`load_memory_tool`) as `load_memory`, as ADK does.
"""

from typing import Any

from app.contexts.tool import ToolContext
from app.tools.function_tool import FunctionTool

_ADVICE = (
    "You have memory. You can use it to answer questions. If any questions need you to look up "
    "the memory, you should call load_memory function with a query."
)


async def load_memory(query: str, tool_context: ToolContext) -> dict[str, Any]:
    """Loads the memory for the current user.

    Args:
        query: The query to load the memory for.
    """
    response = await tool_context.search_memory(query)
    return {"memories": [m.model_dump(mode="json", exclude_none=True) for m in response.memories]}


class LoadMemoryTool(FunctionTool):
    """load_memory as a tool whose description says when to use it."""

    def __init__(self) -> None:
        super().__init__(load_memory)
        self.description = f"{self.description}\n\n{_ADVICE}"


load_memory_tool = LoadMemoryTool()
