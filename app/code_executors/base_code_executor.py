"""BaseCodeExecutor: runs the code blocks a model writes, between model calls.

An LlmAgent with a code executor other than the built-in one looks for a code block (between
`code_block_delimiters`) in each final model answer; the answer is cut after the block, the code
runs, the result is stored as an event of the agent, and the model is called again with it.
"""

from abc import ABC, abstractmethod

from pydantic import BaseModel, ConfigDict

from app.code_executors.code_execution_utils import CodeExecutionInput, CodeExecutionResult
from app.contexts.invocation import InvocationContext


class BaseCodeExecutor(BaseModel, ABC):
    """Runs model-written code (ADK's fields; `stateful` and data-file optimisation unused)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    optimize_data_file: bool = False
    stateful: bool = False
    error_retry_attempts: int = 2
    code_block_delimiters: list[tuple[str, str]] = [
        ("```tool_code\n", "\n```"),
        ("```python\n", "\n```"),
    ]
    execution_result_delimiters: tuple[str, str] = ("```tool_output\n", "\n```")

    @abstractmethod
    async def execute_code(
        self, invocation_context: InvocationContext, code_execution_input: CodeExecutionInput
    ) -> CodeExecutionResult:
        """Run the code; return what it printed."""
