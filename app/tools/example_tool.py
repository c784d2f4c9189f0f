"""ExampleTool: adds few-shot examples to the system instruction before every model call.

It declares nothing to the model and is never called; the examples are chosen for the user's
message of the invocation when a provider supplies them.
"""

from typing import TYPE_CHECKING, Any

from app.contexts.tool import ToolContext
from app.examples.base_example_provider import BaseExampleProvider
from app.examples.example import Example
from app.examples.example_util import build_example_si
from app.tools.base_tool import BaseTool

if TYPE_CHECKING:
    from app.models.llm import LlmRequest


class ExampleTool(BaseTool):
    """Few-shot examples for the model (ADK's ExampleTool)."""

    def __init__(self, examples: list[Example] | BaseExampleProvider) -> None:
        super().__init__(name="example_tool", description="example tool")
        self.examples = (
            examples
            if isinstance(examples, BaseExampleProvider)
            else [e if isinstance(e, Example) else Example.model_validate(e) for e in examples]
        )

    async def process_llm_request(
        self, *, tool_context: ToolContext, llm_request: "LlmRequest"
    ) -> None:
        """Append the examples for the user's message to the system instruction."""
        content = tool_context.user_content
        parts = content.parts if content is not None else None
        if not parts or not parts[0].text:
            return
        llm_request.append_instructions(
            [build_example_si(self.examples, parts[0].text, llm_request.model)]
        )

    async def run_async(self, *, args: dict[str, Any], tool_context: ToolContext) -> Any:
        """Never called: the tool is not declared to the model."""
        del args, tool_context
        raise NotImplementedError("ExampleTool only shapes the model request.")
