"""BuiltInPlanner: the model's own thinking, switched on by a ThinkingConfig.

The thoughts come back as parts marked `thought=True` and are kept apart from the answer by the
engine (they are stored on the event but never become the agent's `output_key` text).
"""

from google.genai import types

from app.contexts.callback import CallbackContext
from app.contexts.readonly import ReadonlyContext
from app.models.llm import LlmRequest
from app.planners.base_planner import BasePlanner


class BuiltInPlanner(BasePlanner):
    """Uses the model's built-in thinking (Gemini 2.5 and later)."""

    def __init__(self, *, thinking_config: types.ThinkingConfig) -> None:
        self.thinking_config = thinking_config

    def apply_thinking_config(self, llm_request: LlmRequest) -> None:
        """Set the request's thinking config (it replaces one the agent's config may carry)."""
        llm_request.config.thinking_config = self.thinking_config

    def build_planning_instruction(
        self, readonly_context: ReadonlyContext, llm_request: LlmRequest
    ) -> str | None:
        """Nothing: the model plans by itself."""
        del readonly_context, llm_request
        return None

    def process_planning_response(
        self, callback_context: CallbackContext, response_parts: list[types.Part]
    ) -> list[types.Part] | None:
        """Nothing: the model marks its thoughts itself."""
        del callback_context, response_parts
        return None
