"""What an LlmAgent's model sees of the session: its branch's events, others' turns as context."""

from google.genai import types

from app.contexts.invocation import InvocationContext
from app.sessions.models import Event


def _belongs_to_branch(event_branch: str | None, branch: str | None) -> bool:
    if not event_branch or not branch:
        return True
    return branch == event_branch or branch.startswith(f"{event_branch}.")


def build_contents(
    ctx: InvocationContext, agent_name: str, include_contents: str
) -> list[types.Content]:
    """The contents the model sees: this branch's events, other agents' turns as context."""
    events = [
        e
        for e in ctx.session.events
        if e.content is not None
        and e.content.parts
        and not e.partial
        and _belongs_to_branch(e.branch, ctx.branch)
    ]
    if include_contents == "none":
        last_user = max(
            (i for i, e in enumerate(events) if e.author == "user"), default=len(events)
        )
        events = events[last_user:]
    contents: list[types.Content] = []
    for event in events:
        assert event.content is not None
        if event.author in ("user", agent_name):
            contents.append(event.content)
        else:
            contents.append(_as_context(event))
    return contents


def _as_context(event: Event) -> types.Content:
    """Another agent's turn, presented to this agent's model as user-side context."""
    parts = [types.Part(text="For context:")]
    for part in event.content.parts or [] if event.content else []:
        if part.text and not part.thought:
            parts.append(types.Part(text=f"[{event.author}] said: {part.text}"))
        elif part.function_call:
            call = part.function_call
            parts.append(
                types.Part(text=f"[{event.author}] called tool `{call.name}` with {call.args}")
            )
        elif part.function_response:
            response = part.function_response
            parts.append(
                types.Part(
                    text=f"[{event.author}] `{response.name}` tool returned {response.response}"
                )
            )
    return types.Content(role="user", parts=parts)
