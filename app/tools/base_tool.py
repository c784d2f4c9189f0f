"""BaseTool: something a model can call by name, declared to it as a FunctionDeclaration."""

from abc import ABC, abstractmethod
from typing import Any

from google.genai import types

from app.contexts.tool import ToolContext


class BaseTool(ABC):
    """A callable capability of an LlmAgent."""

    def __init__(self, *, name: str, description: str = "", is_long_running: bool = False) -> None:
        self.name = name
        self.description = description
        self.is_long_running = is_long_running

    def get_declaration(self) -> types.FunctionDeclaration | None:
        """How the tool is declared to the model (None: not declared, e.g. built-in tools)."""
        return None

    @abstractmethod
    async def run_async(self, *, args: dict[str, Any], tool_context: ToolContext) -> Any:
        """Run the tool with the model's arguments."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"
