"""What an LlmAgent's planner and code executor add to each model request and answer.

Before the call (ADK's request processors): a BuiltInPlanner sets the thinking config; any other
planner adds its planning instruction and the history's thought marks are removed (the model
sees its earlier plans as text it wrote); a BuiltInCodeExecutor declares Gemini's code tool;
another executor sees earlier code and results as text, since the model cannot run code itself.
After the call: the planner may rewrite the answer's parts (PlanReAct marks its plan as
thoughts), and another executor's first code block becomes an `executable_code` part.

The history's Content objects belong to the session's events, so they are copied before any
change, never edited in place.
"""

from google.genai import types

from app.code_executors.base_code_executor import BaseCodeExecutor
from app.code_executors.built_in_code_executor import BuiltInCodeExecutor
from app.code_executors.code_execution_utils import (
    as_text_part,
    extract_code_and_truncate_content,
)
from app.contexts.callback import CallbackContext
from app.contexts.readonly import ReadonlyContext
from app.models.llm import LlmRequest, LlmResponse
from app.planners.base_planner import BasePlanner
from app.planners.built_in_planner import BuiltInPlanner


def static_instruction_text(
    instruction: str | types.Content | types.Part | list[str | types.Part],
) -> str:
    """The text of a static instruction given as a string, Part, Content or list of parts."""
    if isinstance(instruction, str):
        return instruction
    parts: list[str | types.Part]
    if isinstance(instruction, types.Content):
        parts = list(instruction.parts or [])
    elif isinstance(instruction, list):
        parts = instruction
    else:
        parts = [instruction]
    texts = [p if isinstance(p, str) else p.text or "" for p in parts]
    return "\n\n".join(t for t in texts if t)


def apply_planner(planner: BasePlanner, readonly: ReadonlyContext, llm_request: LlmRequest) -> None:
    """The planner's part of the request."""
    if isinstance(planner, BuiltInPlanner):
        planner.apply_thinking_config(llm_request)
        return
    instruction = planner.build_planning_instruction(readonly, llm_request)
    if instruction:
        llm_request.append_instructions([instruction])
    llm_request.contents = [_without_thought_marks(c) for c in llm_request.contents]


def _without_thought_marks(content: types.Content) -> types.Content:
    parts = content.parts or []
    if not any(p.thought is not None for p in parts):
        return content
    return content.model_copy(
        update={"parts": [p.model_copy(update={"thought": None}) for p in parts]}
    )


def apply_code_executor(executor: BaseCodeExecutor, llm_request: LlmRequest) -> None:
    """The executor's part of the request."""
    if isinstance(executor, BuiltInCodeExecutor):
        executor.process_llm_request(llm_request)
        return
    delimiters = executor.execution_result_delimiters
    llm_request.contents = [_code_as_text(c, delimiters) for c in llm_request.contents]


def _code_as_text(content: types.Content, delimiters: tuple[str, str]) -> types.Content:
    parts = content.parts or []
    if not any(p.executable_code is not None or p.code_execution_result is not None for p in parts):
        return content
    return content.model_copy(update={"parts": [as_text_part(p, delimiters) for p in parts]})


def process_response(
    planner: BasePlanner | None,
    executor: BaseCodeExecutor | None,
    callback_context: CallbackContext,
    response: LlmResponse,
) -> LlmResponse:
    """The final answer after the planner's rewrite and the executor's code extraction."""
    if response.content is None or not response.content.parts:
        return response
    if planner is None and (executor is None or isinstance(executor, BuiltInCodeExecutor)):
        return response
    content = response.content.model_copy(deep=True)
    if planner is not None:
        rewritten = planner.process_planning_response(callback_context, content.parts or [])
        if rewritten:
            content.parts = rewritten
    if executor is not None and not isinstance(executor, BuiltInCodeExecutor):
        extract_code_and_truncate_content(content, executor.code_block_delimiters)
    return response.model_copy(update={"content": content})
