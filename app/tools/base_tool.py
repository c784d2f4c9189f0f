"""BaseTool: something a model can call by name, declared to it as a FunctionDeclaration."""

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any

from google.genai import types

from app.contexts.tool import ToolContext

if TYPE_CHECKING:
    from app.models.llm import LlmRequest


class BaseTool(ABC):
    """A callable capability of an LlmAgent."""

    def __init__(self, *, name: str, description: str = "", is_long_running: bool = False) -> None:
        self.name = name
        self.description = description
        self.is_long_running = is_long_running

    def get_declaration(self) -> types.FunctionDeclaration | None:
        """How the tool is declared to the model (None: not declared, e.g. built-in tools)."""
        return None

    async def process_llm_request(
        self, *, tool_context: ToolContext, llm_request: "LlmRequest"
    ) -> None:
        """Shape the model request before each model call (ADK's hook).

        The default declares the tool. Tools that only shape the request (preload_memory,
        google_search, examples) or that also add to it (load_artifacts) override this; they
        may edit `llm_request` freely, since it is built anew for every call.
        """
        del tool_context
        llm_request.append_tools([self])

    @abstractmethod
    async def run_async(self, *, args: dict[str, Any], tool_context: ToolContext) -> Any:
        """Run the tool with the model's arguments."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"
