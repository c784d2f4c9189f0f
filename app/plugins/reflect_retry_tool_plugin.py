"""ReflectAndRetryToolPlugin: a failing tool answers the model with its error, so it can retry.

ADK's plugin, with its constructor: each tool's consecutive failures are counted per invocation
(or across all of them with `TrackingScope.GLOBAL`). Up to `max_retries` failures, the tool's
error becomes a `ToolFailureResponse` the model reads in place of a result, asking it to reflect
and try a corrected call; one failure more and the error is raised (or, with
`throw_exception_if_retry_exceeded=False`, the model is told to stop using the tool). A success
resets the tool's count. `extract_error_from_result` may be overridden to treat some results as
failures too.
"""

import asyncio
import json
from enum import Enum
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from app.plugins.base_plugin import BasePlugin

if TYPE_CHECKING:
    from app.contexts.tool import ToolContext
    from app.tools.base_tool import BaseTool

#: Marks a result this plugin made, so its own after-tool hook leaves it alone.
REFLECT_AND_RETRY_RESPONSE_TYPE = "ERROR_HANDLED_BY_REFLECT_AND_RETRY_PLUGIN"
GLOBAL_SCOPE_KEY = "__global_reflect_and_retry_scope__"


class TrackingScope(Enum):
    """How long a tool's failure count lives."""

    INVOCATION = "invocation"
    GLOBAL = "global"


class ToolFailureResponse(BaseModel):
    """What the model reads instead of a failed tool's result."""

    response_type: str = REFLECT_AND_RETRY_RESPONSE_TYPE
    error_type: str = ""
    error_details: str = ""
    retry_count: int = 0
    reflection_guidance: str = ""


class ReflectAndRetryToolPlugin(BasePlugin):
    """Turns tool failures into guidance for the model, up to `max_retries` in a row per tool."""

    def __init__(
        self,
        name: str = "reflect_retry_tool_plugin",
        max_retries: int = 3,
        throw_exception_if_retry_exceeded: bool = True,
        tracking_scope: TrackingScope = TrackingScope.INVOCATION,
    ) -> None:
        """Args:
        max_retries: failures in a row answered with guidance (0: none).
        throw_exception_if_retry_exceeded: raise the error once they are used up; False tells the
            model to give the tool up instead.
        tracking_scope: count per invocation (default) or across all invocations.
        """
        super().__init__(name)
        if max_retries < 0:
            raise ValueError("max_retries must be a non-negative integer.")
        self.max_retries = max_retries
        self.throw_exception_if_retry_exceeded = throw_exception_if_retry_exceeded
        self.scope = tracking_scope
        self._failures: dict[str, dict[str, int]] = {}
        # Parallel tool calls share the counters.
        self._lock = asyncio.Lock()

    async def after_tool_callback(
        self,
        *,
        tool: "BaseTool",
        tool_args: dict[str, Any],
        tool_context: "ToolContext",
        result: dict[str, Any],
    ) -> dict[str, Any] | None:
        """A success resets the tool's count; a result `extract_error_from_result` flags fails."""
        if result.get("response_type") == REFLECT_AND_RETRY_RESPONSE_TYPE:
            return None
        error = await self.extract_error_from_result(
            tool=tool, tool_args=tool_args, tool_context=tool_context, result=result
        )
        if error is not None:
            return await self._on_failure(tool, tool_args, tool_context, error)
        async with self._lock:
            self._failures.get(self._get_scope_key(tool_context), {}).pop(tool.name, None)
        return None

    async def extract_error_from_result(
        self,
        *,
        tool: "BaseTool",
        tool_args: dict[str, Any],
        tool_context: "ToolContext",
        result: dict[str, Any],
    ) -> Any:
        """The error a successful-looking result carries, if any (override it); None here."""
        del tool, tool_args, tool_context, result
        return None

    async def on_tool_error_callback(
        self,
        *,
        tool: "BaseTool",
        tool_args: dict[str, Any],
        tool_context: "ToolContext",
        error: Exception,
    ) -> dict[str, Any] | None:
        """Answer the model with guidance, or raise `error` once the retries are used up."""
        return await self._on_failure(tool, tool_args, tool_context, error)

    def _get_scope_key(self, tool_context: "ToolContext") -> str:
        """The key failures are counted under (override for per-user or per-session counts)."""
        if self.scope is TrackingScope.INVOCATION:
            return tool_context.invocation_id
        return GLOBAL_SCOPE_KEY

    async def _on_failure(
        self, tool: "BaseTool", tool_args: dict[str, Any], tool_context: "ToolContext", error: Any
    ) -> dict[str, Any]:
        async with self._lock:
            counts = self._failures.setdefault(self._get_scope_key(tool_context), {})
            counts[tool.name] = attempt = counts.get(tool.name, 0) + 1
        if attempt <= self.max_retries:
            return self._response(
                error, attempt, _reflect(tool.name, tool_args, error, attempt, self.max_retries)
            )
        if self.throw_exception_if_retry_exceeded:
            raise error if isinstance(error, Exception) else RuntimeError(str(error))
        return self._response(
            error, self.max_retries, _give_up(tool.name, tool_args, error, self.max_retries)
        )

    @staticmethod
    def _response(error: Any, retry_count: int, guidance: str) -> dict[str, Any]:
        return ToolFailureResponse(
            error_type=type(error).__name__ if isinstance(error, Exception) else "ToolError",
            error_details=str(error),
            retry_count=retry_count,
            reflection_guidance=guidance,
        ).model_dump(mode="json")


def _describe(error: Any) -> str:
    return f"{type(error).__name__}: {error}" if isinstance(error, Exception) else str(error)


def _reflect(tool: str, args: dict[str, Any], error: Any, attempt: int, limit: int) -> str:
    return (
        f"Calling `{tool}` with arguments {json.dumps(args, default=str)} failed with "
        f"{_describe(error)}. This was failure {attempt} of {limit} allowed. Work out why before "
        "calling again: check the arguments against the tool's schema, whether an earlier step "
        "left what this tool needs, and whether another tool or smaller steps would do. Do not "
        "repeat the same call unchanged."
    )


def _give_up(tool: str, args: dict[str, Any], error: Any, limit: int) -> str:
    return (
        f"`{tool}` failed {limit} times in a row; its last call with arguments "
        f"{json.dumps(args, default=str)} failed with {_describe(error)}. Do not call `{tool}` "
        "again for this task: take another approach, or tell the user it cannot be done."
    )
