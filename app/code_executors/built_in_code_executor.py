"""BuiltInCodeExecutor: Gemini runs the code itself, declared as its code-execution tool.

The model's answer then carries `executable_code` and `code_execution_result` parts, stored on
the event as they came; agentd runs nothing.
"""

from google.genai import types

from app.code_executors.base_code_executor import BaseCodeExecutor
from app.code_executors.code_execution_utils import CodeExecutionInput, CodeExecutionResult
from app.contexts.invocation import InvocationContext
from app.models.llm import LlmRequest


class BuiltInCodeExecutor(BaseCodeExecutor):
    """Gemini 2's built-in code execution."""

    def process_llm_request(self, llm_request: LlmRequest) -> None:
        """Declare the code-execution tool (Gemini 2 and later only, as in ADK)."""
        model = llm_request.model or ""
        if not model.startswith("gemini-") or model.startswith("gemini-1"):
            raise ValueError(f"Gemini code execution tool is not supported for model {model}")
        llm_request.config.tools = [
            *(llm_request.config.tools or []),
            types.Tool(code_execution=types.ToolCodeExecution()),
        ]

    async def execute_code(
        self, invocation_context: InvocationContext, code_execution_input: CodeExecutionInput
    ) -> CodeExecutionResult:
        """Never called: the model runs the code."""
        del invocation_context, code_execution_input
        raise NotImplementedError("BuiltInCodeExecutor's code runs inside the model.")
