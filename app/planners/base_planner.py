"""BasePlanner: an instruction added to each model request, and a rewrite of each answer."""

from abc import ABC, abstractmethod

from google.genai import types

from app.contexts.callback import CallbackContext
from app.contexts.readonly import ReadonlyContext
from app.models.llm import LlmRequest


class BasePlanner(ABC):
    """Guides an agent's model to plan, and separates the plan from the answer."""

    @abstractmethod
    def build_planning_instruction(
        self, readonly_context: ReadonlyContext, llm_request: LlmRequest
    ) -> str | None:
        """Text for the system instruction (None: nothing to add)."""

    @abstractmethod
    def process_planning_response(
        self, callback_context: CallbackContext, response_parts: list[types.Part]
    ) -> list[types.Part] | None:
        """The answer's parts as they should be kept (None: unchanged)."""
