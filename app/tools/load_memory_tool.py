"""load_memory: the model searches the user's remembered sessions with a query.

As ADK does, the tool also tells the model about its memory in the system instruction. The
package exports the tool (`load_memory_tool`) as `load_memory`, as ADK does.
"""

from typing import TYPE_CHECKING, Any

from app.contexts.tool import ToolContext
from app.tools.function_tool import FunctionTool

if TYPE_CHECKING:
    from app.models.llm import LlmRequest

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
    """load_memory, with ADK's advice to the model in the system instruction."""

    def __init__(self) -> None:
        super().__init__(load_memory)

    async def process_llm_request(
        self, *, tool_context: ToolContext, llm_request: "LlmRequest"
    ) -> None:
        """Declare the tool and tell the model it has memory."""
        await super().process_llm_request(tool_context=tool_context, llm_request=llm_request)
        llm_request.append_instructions([_ADVICE])


load_memory_tool = LoadMemoryTool()
