"""LongRunningFunctionTool: a function tool whose result the client may send later.

The engine marks such a call's id in the model event's `long_running_tool_ids`. If the function
returns None, no function response is sent and the invocation pauses; the client answers later
with a function response carrying that call id (ADK's flow). A value it returns is sent at once.
"""

from collections.abc import Callable
from typing import Any

from google.genai import types

from app.tools.function_tool import FunctionTool, RequireConfirmation

_NOTE = (
    "NOTE: This is a long-running operation. Do not call this tool again if it has already "
    "returned some intermediate or pending status."
)


class LongRunningFunctionTool(FunctionTool):
    """A FunctionTool that may answer later (ADK's LongRunningFunctionTool)."""

    def __init__(
        self, func: Callable[..., Any], *, require_confirmation: RequireConfirmation = False
    ) -> None:
        super().__init__(func, require_confirmation=require_confirmation)
        self.is_long_running = True

    def get_declaration(self) -> types.FunctionDeclaration:
        """The function's declaration, its description telling the model not to call again."""
        declaration = super().get_declaration()
        description = declaration.description or ""
        declaration.description = f"{description}\n\n{_NOTE}" if description else _NOTE
        return declaration
