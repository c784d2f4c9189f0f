"""Code executors: running the code a model writes (ADK's `google.adk.code_executors`)."""

from app.code_executors.base_code_executor import BaseCodeExecutor
from app.code_executors.built_in_code_executor import BuiltInCodeExecutor
from app.code_executors.code_execution_utils import CodeExecutionInput, CodeExecutionResult
from app.code_executors.unsafe_local_code_executor import UnsafeLocalCodeExecutor

__all__ = [
    "BaseCodeExecutor",
    "BuiltInCodeExecutor",
    "CodeExecutionInput",
    "CodeExecutionResult",
    "UnsafeLocalCodeExecutor",
]
