"""Function calls left without a response, and the event that answers them with an error.

A model's function call and its response are a pair in the history. Gemini tolerates a call
whose response never came; OpenAI and Anthropic reject the whole request, which would leave the
session unusable with them. So when an invocation ends without success (a tool raised, it was
cancelled, timed out or its replica died), every call it left open is answered with
`{"error": {"type": ..., "detail": ...}}`, named by the call's id and tool.
"""

from collections.abc import Iterable, Mapping
from typing import Any

from google.genai import types

from app.sessions.models import Event


def open_function_calls(events: Iterable[Event]) -> list[tuple[str, types.FunctionCall]]:
    """The (author, call) of every function call in `events` that no later event answers.

    Calls without an id cannot be matched to a response and are taken as answered.
    """
    open_calls: dict[str, tuple[str, types.FunctionCall]] = {}
    for event in events:
        if event.content is None or not event.content.parts or event.partial:
            continue
        for part in event.content.parts:
            call = part.function_call
            if call is not None and call.id:
                open_calls[call.id] = (event.author, call)
            response = part.function_response
            if response is not None and response.id:
                open_calls.pop(response.id, None)
    return list(open_calls.values())


def error_responses(
    invocation_id: str, calls: list[tuple[str, types.FunctionCall]], error: Mapping[str, Any]
) -> Event | None:
    """One event answering every call in `calls` with `{"error": {type, detail}}` (None if none).

    `error` is the invocation's problem (`type`, `detail`). The event is authored by the agent
    that made the first call, as a function-response event is; its content's role is "user".
    """
    if not calls:
        return None
    problem = {"type": error.get("type", "internal-error"), "detail": error.get("detail")}
    payload = {"error": problem}
    parts = [
        types.Part(
            function_response=types.FunctionResponse(id=call.id, name=call.name, response=payload)
        )
        for _, call in calls
    ]
    return Event(
        invocation_id=invocation_id,
        author=calls[0][0],
        content=types.Content(role="user", parts=parts),
    )


__all__ = ["error_responses", "open_function_calls"]
