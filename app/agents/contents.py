"""What an LlmAgent's model sees of the session: its branch's events, others' turns as context.

Every model call needs the whole history, so building it must not cost O(history) per call: the
last result per (session, agent, branch) is kept and only events appended since are converted.
The memo is trusted only while the last event it saw is the very same object at the place its
seq gives (sessions share Event objects through the history cache), so a re-created or otherwise
different history is rebuilt from scratch. A history whose oldest events were let go (a session
past `AGENTD_MAX_SESSION_EVENTS` slides by one turn a turn) keeps its memo: the contents of the
events it no longer holds are dropped, up to the next turn's start, so a turn stays O(new events)
and the model never gets a response whose call went.

`adk_request_credential` and `adk_request_confirmation` calls and their answers are never shown
to the model (as in ADK), and a call answered more than once (a tool that asked for a credential
or a confirmation answers again once it has it) shows only its latest answer, in the place of the
first. When the latest content answers a call made further back (a long-running tool's result
sent later by the client), what came between is dropped so the answer follows its call, as in
ADK. Nor does it see the calls an AgentTool's wrapped agent passed up to the client, or the
client's answers to them (the AgentTool's final answer stands for them).

Compaction (`app.agents.compaction`): once the session holds a compaction event, the contents
start with the latest one's summary (a user-side content, which every provider accepts first),
then the events after the range it covers; a late answer whose call the summary covers (a
long-running tool's result) is shown as context text, never as a response without its call.
A new compaction event among the appended events rebuilds the memo from it, so a turn stays
O(new events) and only the latest summary is ever sent (ADK 2.13 sends every one).

Token budget (`RunConfig.max_context_tokens`): the oldest whole turns (a turn runs from a user
message to the next) are left out of the request until the rest fits, counted with the model's
`estimate_tokens`; a turn boundary that a call and its response straddle is never cut at, and
the latest turn is kept even when it alone exceeds the budget.
"""

from bisect import bisect_left
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

from google.genai import types

from app.agents.compaction import first_after, latest_compaction
from app.agents.token_budget import (
    CONTEXT_LEAD,
    TokenEstimate,
    first_turn_start,
    track_calls,
    within_budget,
)
from app.contexts.invocation import InvocationContext
from app.models.llm import estimate_tokens
from app.sessions.client_calls import (
    AGENT_TOOL_EVENTS_KEY,
    AGENT_TOOL_WAITING_KEY,
    is_client_request_event,
    passed_up,
)
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
    #: The seq of the event each content came from (-1: a summary, kept while its memo lives).
    seqs: list[int]
    #: Ids of function calls in `contents` that no later content answers.
    open_calls: frozenset[str]
    #: Ids of the function responses in `contents`, and of those answered more than once
    #: (grown in place: the memo that held them is replaced by the one that gets them).
    answered: set[str]
    repeated: set[str]
    #: Ids of the inner calls AgentTools passed up to the client (their answers are hidden).
    hidden: frozenset[str]
    #: `contents` starts with a compaction's summary.
    summarized: bool = False


_memo: OrderedDict[tuple[str, ...], _Memo] = OrderedDict()


def build_contents(
    ctx: InvocationContext,
    agent_name: str,
    include_contents: str,
    *,
    estimate: TokenEstimate = estimate_tokens,
) -> list[types.Content]:
    """The contents the model sees: this branch's events, other agents' turns as context;
    within the run's token budget as `estimate` counts (the agent's model's, never a network
    call)."""
    events = ctx.session.events
    if include_contents == "none":
        visible = _visible(events, ctx.branch)
        last_user = max(
            (i for i, e in enumerate(visible) if e.author == "user"), default=len(visible)
        )
        contents = _convert_visible(visible[last_user:], agent_name, _track_hidden(events, set()))
        _, repeated = _track_answers(contents, set(), set())
        return within_budget(
            _latest_answers_only(_answered_only(contents, track_calls(contents, set())), repeated),
            ctx,
            estimate,
        )
    session = ctx.session
    key = (session.app_name, session.user_id, session.id, agent_name, ctx.branch or "")
    memo = _memo.get(key)
    seen = _memo_fits(memo, events)
    if memo is not None and seen is not None and not _compacts(events[seen:]):
        hidden = _track_hidden(events[seen:], set(memo.hidden))
        new, new_seqs = _convert(events[seen:], agent_name, ctx.branch, hidden)
        open_calls = track_calls(new, set(memo.open_calls))
        answered, repeated = _track_answers(new, memo.answered, memo.repeated)
        contents, seqs = _after_window_start(memo, events[0].seq)
        # In place when the window did not move (the memo is replaced just below): the memo's
        # lists are never handed out (the request gets a copy), and copying a long history's
        # lists every turn would be O(history).
        contents.extend(new)
        seqs.extend(new_seqs)
        summarized = memo.summarized
    else:
        compaction = latest_compaction(events)
        since = events
        lead: list[types.Content] = []
        if compaction is not None:
            since = events[first_after(events, compaction.end_seq) :]
            lead = [_summary_content(compaction.summary)]
        hidden = _track_hidden(since, set())
        converted, seqs = _convert(since, agent_name, ctx.branch, hidden)
        if compaction is None and events and (events[0].seq or 1) > 1:
            # The history's start was let go: begin at a turn, never on an orphan response.
            skip = first_turn_start(converted, 0)
            converted, seqs = converted[skip:], seqs[skip:]
        contents = lead + converted
        seqs = [-1] * len(lead) + seqs
        open_calls = track_calls(contents, set())
        answered, repeated = _track_answers(contents, set(), set())
        summarized = compaction is not None
    if events:
        _memo[key] = _Memo(
            events[0],
            events[-1],
            len(events),
            contents,
            seqs,
            frozenset(open_calls),
            answered,
            repeated,
            frozenset(hidden),
            summarized,
        )
        _memo.move_to_end(key)
        while len(_memo) > MEMO_SIZE:
            _memo.popitem(last=False)
    if summarized:
        contents = _calls_summarized_as_context(contents)
    latest = _latest_answer_after_its_call(contents)
    if latest is not None:
        contents = latest
        open_calls = track_calls(contents, set())
        _, repeated = _track_answers(contents, set(), set())
    # A copy: callbacks may edit the request's list, and the memo must not see that.
    return within_budget(
        _latest_answers_only(_answered_only(contents, open_calls), repeated), ctx, estimate
    )


#: How the latest compaction's summary is introduced to the model.
SUMMARY_LEAD = "Summary of the conversation so far:"


def _compacts(events: Sequence[Event]) -> bool:
    return any(e.actions.compaction is not None for e in events)


def _summary_content(summary: types.Content) -> types.Content:
    """The summary as the first content: user-side (every provider accepts a user turn first;
    ADK shows it as the agent's own turn), after a line saying what it is."""
    return types.Content(role="user", parts=[types.Part(text=SUMMARY_LEAD), *(summary.parts or [])])


def _calls_summarized_as_context(contents: list[types.Content]) -> list[types.Content]:
    """`contents` with each function response whose call the summary replaced shown as text
    (a long-running tool's result sent after its call was compacted): a response without its
    call is refused by OpenAI and Anthropic."""
    called: set[str] = set()
    changed: list[types.Content] | None = None
    for index, content in enumerate(contents):
        parts = content.parts or []
        for part in parts:
            if part.function_call is not None and part.function_call.id:
                called.add(part.function_call.id)
        orphans = [
            p
            for p in parts
            if p.function_response is not None and p.function_response.id not in called
        ]
        if not orphans:
            continue
        if changed is None:
            changed = list(contents)
        shown = [
            types.Part(
                text=f"`{p.function_response.name}` tool returned {p.function_response.response}"
            )
            if p in orphans and p.function_response is not None
            else p
            for p in parts
        ]
        changed[index] = content.model_copy(update={"parts": shown})
    return contents if changed is None else changed


def _memo_fits(memo: _Memo | None, events: Sequence[Event]) -> int | None:
    """How many of `events` the memo already converted (None: it does not fit this history).

    By seq where events have one: the memo's last event must be the very object at the place
    its seq gives, and the history may have let go of its oldest events since. Without seqs
    (a history built by hand), the first and last events must be the memo's, in place.
    """
    if memo is None or not events:
        return None
    first_seq, last_seq = events[0].seq, memo.last.seq
    if first_seq is None or last_seq is None or memo.first.seq is None:
        fits = (
            0 < memo.count <= len(events)
            and events[0] is memo.first
            and events[memo.count - 1] is memo.last
        )
        return memo.count if fits else None
    at = last_seq - first_seq
    if first_seq < memo.first.seq or not 0 <= at < len(events) or events[at] is not memo.last:
        return None
    return at + 1


def _after_window_start(
    memo: _Memo, first_seq: int | None
) -> tuple[list[types.Content], list[int]]:
    """The memo's contents (and their seqs) without those of events older than `first_seq`,
    up to the next turn's start; a summary stays.

    Trimmed in place (the memo is replaced by its caller): a history held at its cap moves its
    window every turn, and a copy per turn would be O(history).
    """
    old_first = memo.first.seq
    if first_seq is None or old_first is None or first_seq <= old_first:
        return memo.contents, memo.seqs
    keep = 1 if memo.summarized else 0
    cut = first_turn_start(memo.contents, bisect_left(memo.seqs, first_seq, lo=keep))
    del memo.contents[keep:cut]
    del memo.seqs[keep:cut]
    return memo.contents, memo.seqs


def _latest_answer_after_its_call(contents: list[types.Content]) -> list[types.Content] | None:
    """When the last content answers calls made further back (a long-running tool's result the
    client sent later), the contents up to the latest of those calls, then its answers: what
    came between (the tool's earlier "pending" response, the model's replies to it) is dropped,
    as ADK's `_rearrange_events_for_latest_function_response` does, so the model sees the result
    as the new turn. The answers of that call's other (parallel) calls are kept. None: nothing
    to rearrange."""
    if len(contents) < 2:
        return None
    last = contents[-1]
    answered = {
        p.function_response.id
        for p in last.parts or ()
        if p.function_response is not None and p.function_response.id
    }
    if not answered:
        return None
    at = next(
        (
            i
            for i in range(len(contents) - 2, -1, -1)
            if any(
                p.function_call is not None and p.function_call.id in answered
                for p in contents[i].parts or ()
            )
        ),
        None,
    )
    if at is None or at == len(contents) - 2:
        return None
    called = {p.function_call.id for p in contents[at].parts or () if p.function_call is not None}
    merged: dict[str | None, types.Part] = {}
    for content in contents[at + 1 :]:
        for part in content.parts or ():
            response = part.function_response
            if response is not None and response.id in called:
                merged[response.id] = part  # a later answer to the same call replaces it
    others = [p for p in last.parts or () if p.function_response is None]
    parts = [*merged.values(), *others]
    return [*contents[: at + 1], last.model_copy(update={"parts": parts})]


def _track_answers(
    contents: Sequence[types.Content], answered: set[str], repeated: set[str]
) -> tuple[set[str], set[str]]:
    """`answered` and `repeated` updated with the function responses `contents` holds."""
    for content in contents:
        for part in content.parts or ():
            response = part.function_response
            if response is not None and response.id:
                if response.id in answered:
                    repeated.add(response.id)
                answered.add(response.id)
    return answered, repeated


def _latest_answers_only(contents: list[types.Content], repeated: set[str]) -> list[types.Content]:
    """`contents` with each call in `repeated` answered once: by its latest response, put where
    its first response was (ADK's contents do the same), so calls and answers stay paired."""
    if not repeated:
        return contents
    latest: dict[str, types.Part] = {}
    for content in contents:
        for part in content.parts or ():
            if part.function_response is not None and part.function_response.id in repeated:
                latest[part.function_response.id] = part
    kept: list[types.Content] = []
    placed: set[str] = set()
    for content in contents:
        parts: list[types.Part] = []
        changed = False
        for part in content.parts or ():
            response_id = part.function_response.id if part.function_response else None
            if response_id is None or response_id not in latest:
                parts.append(part)
                continue
            changed = True
            if response_id not in placed:
                placed.add(response_id)
                parts.append(latest[response_id])
        if not changed:
            kept.append(content)
        elif parts:
            kept.append(content.model_copy(update={"parts": parts}))
    return kept


def _answered_only(contents: list[types.Content], open_calls: set[str]) -> list[types.Content]:
    """A copy of `contents` without the calls in `open_calls`.

    Defence in depth: a call without its response (a run that died mid-tool before its calls
    were answered) makes OpenAI and Anthropic reject the whole request, so it is never sent.
    """
    if not open_calls:
        return list(contents)
    kept: list[types.Content] = []
    for content in contents:
        parts = content.parts or []
        rest = [p for p in parts if p.function_call is None or p.function_call.id not in open_calls]
        if len(rest) == len(parts):
            kept.append(content)
        elif rest:
            kept.append(content.model_copy(update={"parts": rest}))
    return kept


def _visible(events: Sequence[Event], branch: str | None) -> list[Event]:
    return [
        e
        for e in events
        if e.content is not None
        and e.content.parts
        and not e.partial
        and _belongs_to_branch(e.branch, branch)
        and not is_client_request_event(e)
    ]


def _track_hidden(events: Sequence[Event], hidden: set[str]) -> set[str]:
    """`hidden` updated with the inner calls `events` pass up (a listing precedes its answers)."""
    for event in events:
        if event.custom_metadata:
            hidden.update(passed_up(event))
    return hidden


def _convert(
    events: Sequence[Event], agent_name: str, branch: str | None, hidden: set[str]
) -> tuple[list[types.Content], list[int]]:
    """The contents of `events` this agent sees, and the seq of the event each came from."""
    contents: list[types.Content] = []
    seqs: list[int] = []
    for event in _visible(events, branch):
        content = _content_for(event, agent_name, hidden)
        if content is not None:
            contents.append(content)
            seqs.append(event.seq or 0)
    return contents, seqs


def _convert_visible(
    visible: Sequence[Event], agent_name: str, hidden: set[str]
) -> list[types.Content]:
    contents = []
    for event in visible:
        content = _content_for(event, agent_name, hidden)
        if content is not None:
            contents.append(content)
    return contents


def _content_for(event: Event, agent_name: str, hidden: set[str]) -> types.Content | None:
    assert event.content is not None
    content = _shown(event.content)
    if event.author == "user" and hidden:
        parts = content.parts or []
        kept = [
            p for p in parts if p.function_response is None or p.function_response.id not in hidden
        ]
        if not kept:
            return None
        if len(kept) != len(parts):
            content = content.model_copy(update={"parts": kept})
    if event.author in ("user", agent_name):
        return content
    return _as_context(event.author, content)


def _shown(content: types.Content) -> types.Content:
    """`content` without the wrapped agent's history an AgentTool call keeps in its response
    while it waits for a confirmation (framework data, never for the model)."""
    parts = content.parts or []
    if not any(_keeps_history(p) for p in parts):
        return content
    shown = []
    for part in parts:
        response = part.function_response
        if response is not None and _keeps_history(part):
            kept = {
                k: v
                for k, v in (response.response or {}).items()
                if k not in (AGENT_TOOL_EVENTS_KEY, AGENT_TOOL_WAITING_KEY)
            }
            part = part.model_copy(
                update={"function_response": response.model_copy(update={"response": kept})}
            )
        shown.append(part)
    return content.model_copy(update={"parts": shown})


def _keeps_history(part: types.Part) -> bool:
    response = part.function_response
    return (
        response is not None
        and isinstance(response.response, dict)
        and AGENT_TOOL_EVENTS_KEY in response.response
    )


def _as_context(author: str, content: types.Content) -> types.Content:
    """Another agent's turn, presented to this agent's model as user-side context."""
    parts = [types.Part(text=CONTEXT_LEAD)]
    for part in content.parts or []:
        if part.text and not part.thought:
            parts.append(types.Part(text=f"[{author}] said: {part.text}"))
        elif part.function_call:
            call = part.function_call
            parts.append(types.Part(text=f"[{author}] called tool `{call.name}` with {call.args}"))
        elif part.function_response:
            response = part.function_response
            parts.append(
                types.Part(text=f"[{author}] `{response.name}` tool returned {response.response}")
            )
    return types.Content(role="user", parts=parts)
