"""BasePlugin: override any hook; a non-None result short-circuits like an agent callback would.

The hooks and their names are ADK 2.13's. The two error hooks (`on_agent_error_callback`,
`on_run_error_callback`) only observe: every plugin is told, and the error is raised anyway.
"""

from typing import TYPE_CHECKING, Any

from google.genai import types

if TYPE_CHECKING:
    from app.agents.base_agent import BaseAgent
    from app.contexts.callback import CallbackContext
    from app.contexts.invocation import InvocationContext
    from app.contexts.tool import ToolContext
    from app.models.llm import LlmRequest, LlmResponse
    from app.sessions.models import Event
    from app.tools.base_tool import BaseTool


class BasePlugin:
    """A named set of runner-wide hooks; every hook defaults to "no opinion" (None)."""

    def __init__(self, name: str) -> None:
        self.name = name

    async def on_user_message_callback(
        self, *, invocation_context: "InvocationContext", user_message: types.Content
    ) -> types.Content | None:
        """A new user message arrived, before it is stored; Content replaces it."""
        return None

    async def before_run_callback(
        self, *, invocation_context: "InvocationContext"
    ) -> types.Content | None:
        """Before the root agent runs; Content ends the invocation with that reply."""
        return None

    async def on_event_callback(
        self, *, invocation_context: "InvocationContext", event: "Event"
    ) -> "Event | None":
        """An agent yielded `event`, before it is stored and yielded; see `merge_event`."""
        return None

    async def after_run_callback(self, *, invocation_context: "InvocationContext") -> None:
        """After the invocation finished."""
        return None

    async def on_run_error_callback(
        self, *, invocation_context: "InvocationContext", error: Exception
    ) -> None:
        """The invocation failed (instead of after_run); notification only, `error` is raised."""
        return None

    async def close(self) -> None:
        """Release what the plugin holds (ADK's `Runner.close`)."""
        return None

    async def before_agent_callback(
        self, *, agent: "BaseAgent", callback_context: "CallbackContext"
    ) -> types.Content | None:
        """Before any agent runs; Content skips the agent."""
        return None

    async def after_agent_callback(
        self, *, agent: "BaseAgent", callback_context: "CallbackContext"
    ) -> types.Content | None:
        """After any agent ran; Content replaces its output."""
        return None

    async def on_agent_error_callback(
        self, *, agent: "BaseAgent", callback_context: "CallbackContext", error: Exception
    ) -> None:
        """An agent raised (instead of after_agent); notification only, `error` is raised."""
        return None

    async def before_model_callback(
        self, *, callback_context: "CallbackContext", llm_request: "LlmRequest"
    ) -> "LlmResponse | None":
        """Before any model call; a response skips the call."""
        return None

    async def after_model_callback(
        self, *, callback_context: "CallbackContext", llm_response: "LlmResponse"
    ) -> "LlmResponse | None":
        """After any model call; a response replaces the model's."""
        return None

    async def on_model_error_callback(
        self, *, callback_context: "CallbackContext", llm_request: "LlmRequest", error: Exception
    ) -> "LlmResponse | None":
        """A model call failed; a response is used instead of failing."""
        return None

    async def before_tool_callback(
        self, *, tool: "BaseTool", tool_args: dict[str, Any], tool_context: "ToolContext"
    ) -> dict[str, Any] | None:
        """Before any tool runs; a dict skips the tool and is its result."""
        return None

    async def after_tool_callback(
        self,
        *,
        tool: "BaseTool",
        tool_args: dict[str, Any],
        tool_context: "ToolContext",
        result: dict[str, Any],
    ) -> dict[str, Any] | None:
        """After any tool ran; a dict replaces its result."""
        return None

    async def on_tool_error_callback(
        self,
        *,
        tool: "BaseTool",
        tool_args: dict[str, Any],
        tool_context: "ToolContext",
        error: Exception,
    ) -> dict[str, Any] | None:
        """A tool raised; a dict is used as its result instead of failing."""
        return None
