"""LoggingPlugin: logs every plugin hook through `logging` (ADK's LoggingPlugin prints instead).

Records go to the `app.plugins.logging_plugin` logger at INFO, errors at ERROR; the plugin never
changes what it sees (every hook returns None).
"""

import logging
from typing import TYPE_CHECKING, Any

from google.genai import types

from app.plugins.base_plugin import BasePlugin

if TYPE_CHECKING:
    from app.agents.base_agent import BaseAgent
    from app.contexts.callback import CallbackContext
    from app.contexts.invocation import InvocationContext
    from app.contexts.tool import ToolContext
    from app.models.llm import LlmRequest, LlmResponse
    from app.sessions.models import Event
    from app.tools.base_tool import BaseTool

logger = logging.getLogger(__name__)

#: Texts longer than this are cut in the log records.
_MAX_TEXT = 200


class LoggingPlugin(BasePlugin):
    """Logs each hook's key facts (ids, agent, tool, model, texts, errors) for debugging."""

    def __init__(self, name: str = "logging_plugin") -> None:
        super().__init__(name)

    def _log(self, hook: str, message: str, *args: object, level: int = logging.INFO) -> None:
        logger.log(level, "[%s] %s: " + message, self.name, hook, *args)

    async def on_user_message_callback(
        self, *, invocation_context: "InvocationContext", user_message: types.Content
    ) -> types.Content | None:
        """Log the user's message."""
        self._log(
            "user message",
            "invocation=%s session=%s text=%r",
            invocation_context.invocation_id,
            invocation_context.session.id,
            _text(user_message),
        )
        return None

    async def before_run_callback(
        self, *, invocation_context: "InvocationContext"
    ) -> types.Content | None:
        """Log the start of the invocation."""
        self._log(
            "run start",
            "invocation=%s agent=%s",
            invocation_context.invocation_id,
            invocation_context.agent.name,
        )
        return None

    async def on_event_callback(
        self, *, invocation_context: "InvocationContext", event: "Event"
    ) -> "Event | None":
        """Log an event the agents yielded."""
        del invocation_context
        calls = [c.name for c in event.get_function_calls()]
        self._log(
            "event",
            "id=%s author=%s final=%s text=%r calls=%s",
            event.id,
            event.author,
            event.is_final_response(),
            _text(event.content),
            calls,
        )
        return None

    async def after_run_callback(self, *, invocation_context: "InvocationContext") -> None:
        """Log the end of the invocation."""
        self._log("run end", "invocation=%s", invocation_context.invocation_id)

    async def on_run_error_callback(
        self, *, invocation_context: "InvocationContext", error: Exception
    ) -> None:
        """Log the invocation's failure."""
        self._log(
            "run error",
            "invocation=%s error=%r",
            invocation_context.invocation_id,
            error,
            level=logging.ERROR,
        )

    async def before_agent_callback(
        self, *, agent: "BaseAgent", callback_context: "CallbackContext"
    ) -> types.Content | None:
        """Log an agent's start."""
        self._log(
            "agent start", "agent=%s invocation=%s", agent.name, callback_context.invocation_id
        )
        return None

    async def after_agent_callback(
        self, *, agent: "BaseAgent", callback_context: "CallbackContext"
    ) -> types.Content | None:
        """Log an agent's end."""
        self._log("agent end", "agent=%s invocation=%s", agent.name, callback_context.invocation_id)
        return None

    async def on_agent_error_callback(
        self, *, agent: "BaseAgent", callback_context: "CallbackContext", error: Exception
    ) -> None:
        """Log an agent's failure."""
        del callback_context
        self._log("agent error", "agent=%s error=%r", agent.name, error, level=logging.ERROR)

    async def before_model_callback(
        self, *, callback_context: "CallbackContext", llm_request: "LlmRequest"
    ) -> "LlmResponse | None":
        """Log a model request."""
        self._log(
            "model request",
            "agent=%s model=%s contents=%d tools=%s",
            callback_context.agent_name,
            llm_request.model,
            len(llm_request.contents),
            sorted(llm_request.tools_dict),
        )
        return None

    async def after_model_callback(
        self, *, callback_context: "CallbackContext", llm_response: "LlmResponse"
    ) -> "LlmResponse | None":
        """Log a model response."""
        self._log(
            "model response",
            "agent=%s text=%r error=%s",
            callback_context.agent_name,
            _text(llm_response.content),
            llm_response.error_code,
        )
        return None

    async def on_model_error_callback(
        self, *, callback_context: "CallbackContext", llm_request: "LlmRequest", error: Exception
    ) -> "LlmResponse | None":
        """Log a failed model call."""
        del llm_request
        self._log(
            "model error",
            "agent=%s error=%r",
            callback_context.agent_name,
            error,
            level=logging.ERROR,
        )
        return None

    async def before_tool_callback(
        self, *, tool: "BaseTool", tool_args: dict[str, Any], tool_context: "ToolContext"
    ) -> dict[str, Any] | None:
        """Log a tool call."""
        self._log(
            "tool call",
            "tool=%s call=%s args=%s",
            tool.name,
            tool_context.function_call_id,
            tool_args,
        )
        return None

    async def after_tool_callback(
        self,
        *,
        tool: "BaseTool",
        tool_args: dict[str, Any],
        tool_context: "ToolContext",
        result: dict[str, Any],
    ) -> dict[str, Any] | None:
        """Log a tool's result."""
        del tool_args
        self._log(
            "tool result",
            "tool=%s call=%s result=%s",
            tool.name,
            tool_context.function_call_id,
            _cut(str(result)),
        )
        return None

    async def on_tool_error_callback(
        self,
        *,
        tool: "BaseTool",
        tool_args: dict[str, Any],
        tool_context: "ToolContext",
        error: Exception,
    ) -> dict[str, Any] | None:
        """Log a failed tool call."""
        del tool_args
        self._log(
            "tool error",
            "tool=%s call=%s error=%r",
            tool.name,
            tool_context.function_call_id,
            error,
            level=logging.ERROR,
        )
        return None


def _text(content: types.Content | None) -> str:
    if content is None or not content.parts:
        return ""
    return _cut("".join(part.text or "" for part in content.parts))


def _cut(text: str) -> str:
    return text if len(text) <= _MAX_TEXT else text[:_MAX_TEXT] + "..."
