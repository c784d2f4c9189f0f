"""The shapes a code executor takes and returns, and finding code blocks in a model's answer."""

from dataclasses import dataclass, field

from google.genai import types


@dataclass
class CodeExecutionInput:
    """The code to run."""

    code: str
    execution_id: str | None = None


@dataclass
class CodeExecutionResult:
    """What the code printed."""

    stdout: str = ""
    stderr: str = ""
    output_files: list[types.Part] = field(default_factory=list)


def extract_code_and_truncate_content(
    content: types.Content, delimiters: list[tuple[str, str]]
) -> str | None:
    """The first code block in `content`'s text, or None.

    As ADK does, the content is cut after that block: the text before it stays, the block
    becomes an `executable_code` part, and anything after it is dropped (the model continues
    once it has seen the result).
    """
    parts = content.parts or []
    for index, part in enumerate(parts):
        if part.executable_code is not None:
            return part.executable_code.code
        if part.text is None or part.thought:
            continue
        found = _first_block(part.text, delimiters)
        if found is None:
            continue
        before, code = found
        kept = [*parts[:index]]
        if before.strip():
            kept.append(types.Part(text=before))
        kept.append(
            types.Part(
                executable_code=types.ExecutableCode(code=code, language=types.Language.PYTHON)
            )
        )
        content.parts = kept
        return code
    return None


def _first_block(text: str, delimiters: list[tuple[str, str]]) -> tuple[str, str] | None:
    best: tuple[int, str, str] | None = None
    for opening, closing in delimiters:
        start = text.find(opening)
        if start < 0:
            continue
        end = text.find(closing, start + len(opening))
        if end < 0:
            continue
        if best is None or start < best[0]:
            best = (start, text[:start], text[start + len(opening) : end])
    return None if best is None else (best[1], best[2])


def result_part(result: CodeExecutionResult) -> types.Part:
    """The result as ADK records it: a `code_execution_result` part."""
    if result.stderr:
        return types.Part(
            code_execution_result=types.CodeExecutionResult(
                outcome=types.Outcome.OUTCOME_FAILED, output=result.stderr
            )
        )
    return types.Part(
        code_execution_result=types.CodeExecutionResult(
            outcome=types.Outcome.OUTCOME_OK,
            output=f"Code execution result:\n{result.stdout}\n" if result.stdout else "",
        )
    )


def as_text_part(part: types.Part, result_delimiters: tuple[str, str]) -> types.Part:
    """Code and result parts as the text a model without code execution can read."""
    if part.executable_code is not None:
        return types.Part(text=f"```tool_code\n{part.executable_code.code}\n```")
    if part.code_execution_result is not None:
        opening, closing = result_delimiters
        return types.Part(text=f"{opening}{part.code_execution_result.output or ''}{closing}")
    return part
