"""Turns of a model request's contents, and the run's token budget over them.

A turn runs from a user message (not a tool result, not another agent's turn shown as context) to
the next. Whatever is left out of a request is left out by whole turns: the token budget
(`RunConfig.max_context_tokens`) drops the oldest, and a history that let go of its oldest events
starts at the next turn, so a function response never reaches the model without its call.
"""

from collections.abc import Callable, Iterable, Sequence

from google.genai import types

from app.contexts.invocation import InvocationContext

#: Tokens a request's contents would take, as the agent's model counts them locally.
TokenEstimate = Callable[[Sequence[types.Content]], int]

#: The first part of another agent's turn shown as context (not a user message: never a turn's
#: start).
CONTEXT_LEAD = "For context:"


def starts_turn(content: types.Content) -> bool:
    """Whether `content` is a user message that is not a tool result nor another agent's turn
    shown as context."""
    parts = content.parts or []
    return (
        content.role == "user"
        and bool(parts)
        and not any(p.function_response is not None for p in parts)
        and parts[0].text != CONTEXT_LEAD
    )


def first_turn_start(contents: Sequence[types.Content], at: int) -> int:
    """The index of the first content from `at` on that starts a turn (len: none does)."""
    return next(
        (index for index in range(at, len(contents)) if starts_turn(contents[index])),
        len(contents),
    )


def turn_starts(contents: Sequence[types.Content]) -> list[int]:
    """Where turns start: 0, and each content that starts a turn while no call before it waits
    on an answer after."""
    starts = [0]
    open_calls: set[str] = set()
    for index, content in enumerate(contents):
        if index > 0 and not open_calls and starts_turn(content):
            starts.append(index)
        track_calls((content,), open_calls)
    return starts


def track_calls(contents: Iterable[types.Content], open_calls: set[str]) -> set[str]:
    """`open_calls` (updated in place) after the calls `contents` make and the responses it
    holds: the one rule for which function calls still wait for their answer."""
    for content in contents:
        for part in content.parts or ():
            if part.function_call is not None and part.function_call.id:
                open_calls.add(part.function_call.id)
            elif part.function_response is not None and part.function_response.id:
                open_calls.discard(part.function_response.id)
    return open_calls


def within_budget(
    contents: list[types.Content], ctx: InvocationContext, estimate: TokenEstimate
) -> list[types.Content]:
    """`contents` without its oldest whole turns, as many as the run's token budget asks (the
    latest turn is kept even when it alone exceeds it)."""
    budget = ctx.run_config.max_context_tokens
    if budget is None or len(contents) < 2:
        return contents
    starts = turn_starts(contents)
    if len(starts) < 2:
        return contents
    kept_from = starts[-1]
    total = estimate(contents[kept_from:])
    for start, end in zip(reversed(starts[:-1]), reversed(starts[1:]), strict=True):
        total += estimate(contents[start:end])
        if total > budget:
            break
        kept_from = start
    return contents[kept_from:]
