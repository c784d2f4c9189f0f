"""What an LlmAgent's model sees of the session: its branch's events, others' turns as context.

Every model call needs the whole history, so building it must not cost O(history) per call: the
last result per (session, agent, branch) is kept and only events appended since are converted.
The memo is trusted only while the session's first and last-seen events are the very same objects
(sessions share Event objects through the history cache), so a re-created, trimmed or otherwise
different history is rebuilt from scratch.
"""

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

from google.genai import types

from app.contexts.invocation import InvocationContext
from app.sessions.models import Event


def _belongs_to_branch(event_branch: str | None, branch: str | None) -> bool:
    if not event_branch or not branch:
        return True
    return branch == event_branch or branch.startswith(f"{event_branch}.")


#: Sessions whose contents are remembered (least recently used dropped first).
MEMO_SIZE = 1024


@dataclass(frozen=True)
class _Memo:
    first: Event
    last: Event
    count: int
    contents: list[types.Content]


_memo: OrderedDict[tuple[str, ...], _Memo] = OrderedDict()


def build_contents(
    ctx: InvocationContext, agent_name: str, include_contents: str
) -> list[types.Content]:
    """The contents the model sees: this branch's events, other agents' turns as context."""
    events = ctx.session.events
    if include_contents == "none":
        visible = _visible(events, ctx.branch)
        last_user = max(
            (i for i, e in enumerate(visible) if e.author == "user"), default=len(visible)
        )
        return [_content_for(e, agent_name) for e in visible[last_user:]]
    session = ctx.session
    key = (session.app_name, session.user_id, session.id, agent_name, ctx.branch or "")
    memo = _memo.get(key)
    if (
        memo is not None
        and 0 < memo.count <= len(events)
        and events[0] is memo.first
        and events[memo.count - 1] is memo.last
    ):
        contents = memo.contents + _convert(events[memo.count :], agent_name, ctx.branch)
    else:
        contents = _convert(events, agent_name, ctx.branch)
    if events:
        _memo[key] = _Memo(events[0], events[-1], len(events), contents)
        _memo.move_to_end(key)
        while len(_memo) > MEMO_SIZE:
            _memo.popitem(last=False)
    # A copy: callbacks may edit the request's list, and the memo must not see that.
    return list(contents)


def _visible(events: Sequence[Event], branch: str | None) -> list[Event]:
    return [
        e
        for e in events
        if e.content is not None
        and e.content.parts
        and not e.partial
        and _belongs_to_branch(e.branch, branch)
    ]


def _convert(events: Sequence[Event], agent_name: str, branch: str | None) -> list[types.Content]:
    return [_content_for(e, agent_name) for e in _visible(events, branch)]


def _content_for(event: Event, agent_name: str) -> types.Content:
    assert event.content is not None
    if event.author in ("user", agent_name):
        return event.content
    return _as_context(event)


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
