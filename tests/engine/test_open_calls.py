"""Function calls without a response (issue 14, item 4), below HTTP.

`open_function_calls` finds the calls no later event answers, `error_responses` answers them with
the invocation's error, and `build_contents` never hands the model a call without its response,
whether it builds the contents from scratch or extends what it remembered.
"""

import random

import pytest
from google.genai import types

from app.agents import LlmAgent
from app.agents import contents as contents_module
from app.agents.contents import build_contents
from app.contexts.invocation import InvocationContext
from app.errors import AgentdError
from app.models.scripted import Rule, ScriptedLlm
from app.sessions.function_calls import error_responses, open_function_calls
from app.sessions.in_memory import InMemorySessionService
from app.sessions.models import Event, Session
from app.tools.tool_context import ToolContext
from tests.engine.conftest import Services

AGENT = "helper"


def _text(author: str, text: str) -> Event:
    role = "user" if author == "user" else "model"
    return Event(author=author, content=types.Content(role=role, parts=[types.Part(text=text)]))


def _call_part(call_id: str | None, name: str = "tool") -> types.Part:
    return types.Part(function_call=types.FunctionCall(id=call_id, name=name, args={}))


def _response_part(call_id: str | None, name: str = "tool") -> types.Part:
    response = types.FunctionResponse(id=call_id, name=name, response={"result": "ok"})
    return types.Part(function_response=response)


def _calls(*call_ids: str | None, author: str = AGENT, partial: bool | None = None) -> Event:
    parts = [_call_part(call_id, f"tool_{call_id}") for call_id in call_ids]
    return Event(author=author, partial=partial, content=types.Content(role="model", parts=parts))


def _responses(*call_ids: str | None, author: str = AGENT, partial: bool | None = None) -> Event:
    parts = [_response_part(call_id, f"tool_{call_id}") for call_id in call_ids]
    return Event(author=author, partial=partial, content=types.Content(role="user", parts=parts))


def _open_ids(events: list[Event]) -> list[str | None]:
    return [call.id for _, call in open_function_calls(events)]


def _ctx(session: Session) -> InvocationContext:
    return InvocationContext(
        session_service=InMemorySessionService(),
        invocation_id="i",
        agent=LlmAgent(name=AGENT),
        session=session,
    )


def _session(name: str, events: list[Event] | None = None) -> Session:
    return Session(id=name, app_name="a", user_id="u", events=events or [])


def _from_scratch(ctx: InvocationContext, include_contents: str = "default") -> list[types.Content]:
    contents_module._memo.clear()
    result = build_contents(ctx, AGENT, include_contents)
    contents_module._memo.clear()
    return result


def _unanswered_calls(contents: list[types.Content]) -> list[str | None]:
    """Calls in `contents` with no function response for their id after them."""
    answered_later: set[str] = set()
    unanswered: list[str | None] = []
    for content in reversed(contents):
        for part in reversed(content.parts or []):
            if part.function_response is not None and part.function_response.id:
                answered_later.add(part.function_response.id)
            elif part.function_call is not None and part.function_call.id not in answered_later:
                unanswered.append(part.function_call.id)
    return unanswered


def _part_kinds(contents: list[types.Content]) -> list[list[str]]:
    """Each content as its parts: `text`, `call <id>` or `response <id>`."""
    kinds: list[list[str]] = []
    for content in contents:
        row = []
        for part in content.parts or []:
            if part.function_call is not None:
                row.append(f"call {part.function_call.id}")
            elif part.function_response is not None:
                row.append(f"response {part.function_response.id}")
            else:
                row.append(f"text {part.text}")
        kinds.append(row)
    return kinds


def _dump(contents: list[types.Content]) -> list[dict[str, object]]:
    return [c.model_dump(exclude_none=True) for c in contents]


# -- open_function_calls ------------------------------------------------------------------------


def test_open_function_calls_are_the_calls_no_later_response_answers_by_id() -> None:
    events = [
        _text("user", "go"),
        _calls("a", "b"),
        _responses("a"),
        _calls("c", author="other"),
        _responses("x"),  # answers nothing that was called
    ]
    opened = open_function_calls(events)
    assert [(author, call.id, call.name) for author, call in opened] == [
        (AGENT, "b", "tool_b"),
        ("other", "c", "tool_c"),
    ]
    assert _open_ids([*events, _responses("c", "b")]) == []


def test_a_response_before_its_call_does_not_answer_it() -> None:
    assert _open_ids([_responses("a"), _calls("a")]) == ["a"]


def test_open_function_calls_ignore_calls_and_responses_without_an_id() -> None:
    assert _open_ids([_calls(None), _calls("", "a")]) == ["a"]
    # A response without an id answers nothing, not even an id-less call's tool.
    assert _open_ids([_calls("a"), _responses(None), _responses("")]) == ["a"]


def test_open_function_calls_ignore_partial_events() -> None:
    assert _open_ids([_calls("a", partial=True)]) == []
    assert _open_ids([_calls("a"), _responses("a", partial=True)]) == ["a"]
    assert _open_ids([_calls("a", partial=False), _responses("a", partial=False)]) == []


def test_open_function_calls_skip_events_without_content_or_parts() -> None:
    events = [
        Event(author=AGENT, error_code="E"),
        Event(author=AGENT, content=types.Content(role="model", parts=[])),
        _calls("a"),
        Event(author=AGENT, content=types.Content(role="model")),
    ]
    assert _open_ids(events) == ["a"]


def test_a_call_seen_twice_is_open_once() -> None:
    assert _open_ids([_calls("a"), _calls("a")]) == ["a"]


# -- error_responses ----------------------------------------------------------------------------


def test_error_responses_answer_each_call_with_the_problem_type_and_detail() -> None:
    calls = open_function_calls([_calls("a", "b"), _calls("c", author="other")])
    problem = {"type": "invocation-cancelled", "title": "Cancelled.", "status": 409, "detail": "d"}
    answer = error_responses("e-1", calls, problem)
    assert answer is not None
    assert answer.invocation_id == "e-1"
    assert answer.author == AGENT  # the author of the first call, as a response event has
    assert answer.partial is None
    assert answer.error_code is None
    assert answer.content is not None
    assert answer.content.role == "user"
    responses = [
        (r.id, r.name, r.response)
        for r in (p.function_response for p in answer.content.parts or [])
        if r is not None
    ]
    error = {"error": {"type": "invocation-cancelled", "detail": "d"}}
    assert responses == [("a", "tool_a", error), ("b", "tool_b", error), ("c", "tool_c", error)]
    assert _open_ids([_calls("a", "b"), _calls("c", author="other"), answer]) == []


def test_error_responses_are_none_without_calls_and_default_the_problem_type() -> None:
    assert error_responses("e-1", [], {"type": "invocation-timeout", "detail": "late"}) is None
    answer = error_responses("e-1", open_function_calls([_calls("a")]), {})
    assert answer is not None
    assert answer.content is not None
    (part,) = answer.content.parts or []
    assert part.function_response is not None
    assert part.function_response.response == {"error": {"type": "internal-error", "detail": None}}


# -- build_contents -----------------------------------------------------------------------------


def test_a_call_without_a_response_is_not_sent_until_its_response_arrives() -> None:
    contents_module._memo.clear()
    session = _session("s-open")
    ctx = _ctx(session)
    session.events += [_text("user", "go"), _calls("a")]
    assert _part_kinds(build_contents(ctx, AGENT, "default")) == [["text go"]]
    session.events.append(_responses("a"))
    # From the memo: the call it remembered as open comes back once answered.
    assert _part_kinds(build_contents(ctx, AGENT, "default")) == [
        ["text go"],
        ["call a"],
        ["response a"],
    ]
    assert _dump(build_contents(ctx, AGENT, "default")) == _dump(_from_scratch(ctx))


def test_only_the_unanswered_calls_of_a_content_are_dropped_and_the_event_is_untouched() -> None:
    contents_module._memo.clear()
    mixed = Event(
        author=AGENT,
        content=types.Content(
            role="model", parts=[types.Part(text="calling"), _call_part("a"), _call_part("b")]
        ),
    )
    before = mixed.model_dump()
    session = _session("s-mixed", [_text("user", "go"), mixed, _responses("b")])
    ctx = _ctx(session)
    expected = [["text go"], ["text calling", "call b"], ["response b"]]
    assert _part_kinds(build_contents(ctx, AGENT, "default")) == expected
    assert mixed.model_dump() == before  # a copy was trimmed, not the session's event
    session.events.append(_responses("a"))
    # The latest answer goes right after its call, with the other answers of that call's
    # content (ADK's `_rearrange_events_for_latest_function_response` merges them alike).
    assert _part_kinds(build_contents(ctx, AGENT, "default")) == [
        ["text go"],
        ["text calling", "call a", "call b"],
        ["response b", "response a"],
    ]


def test_a_response_before_its_call_does_not_let_the_call_through() -> None:
    contents_module._memo.clear()
    session = _session("s-early", [_text("user", "go"), _responses("a"), _calls("a")])
    assert _part_kinds(build_contents(_ctx(session), AGENT, "default")) == [
        ["text go"],
        ["response a"],
    ]


def test_include_contents_none_drops_the_calls_of_the_last_turn_left_open() -> None:
    contents_module._memo.clear()
    session = _session(
        "s-none", [_text("user", "first"), _calls("a"), _text("user", "again"), _calls("b", "c")]
    )
    session.events.append(_responses("c"))
    assert _part_kinds(build_contents(_ctx(session), AGENT, "none")) == [
        ["text again"],
        ["call c"],
        ["response c"],
    ]


def test_build_contents_never_sends_an_open_call_as_events_are_appended() -> None:
    """A seeded random history, built after every append (from the memo) and from scratch."""
    contents_module._memo.clear()
    rng = random.Random(4242)
    session = _session("s-random")
    ctx = _ctx(session)
    open_ids: list[str] = []
    next_id = 0
    for step in range(300):
        roll = rng.random()
        if roll < 0.2:
            session.events.append(_text("user", f"q{step}"))
        elif roll < 0.45:
            new_ids = [f"c{next_id + i}" for i in range(rng.randint(1, 3))]
            next_id += len(new_ids)
            open_ids += new_ids
            session.events.append(_calls(*new_ids))
        elif roll < 0.7 and open_ids:
            answered = rng.sample(open_ids, rng.randint(1, len(open_ids)))
            open_ids = [i for i in open_ids if i not in answered]
            session.events.append(_responses(*answered))
        elif roll < 0.8:
            # Partial chunks are never sent; a partial call must not count as made, nor a
            # partial response as an answer.
            session.events.append(_calls(f"p{step}", partial=True))
            if open_ids:
                session.events.append(_responses(rng.choice(open_ids), partial=True))
        elif roll < 0.9:
            session.events.append(_text(AGENT, f"a{step}"))
        else:
            session.events.append(_calls(f"o{step}", author="other"))  # context text, not a call
        incremental = build_contents(ctx, AGENT, "default")
        assert _unanswered_calls(incremental) == [], f"step {step}"
        assert _dump(incremental) == _dump(_from_scratch(ctx)), f"step {step}"
        build_contents(ctx, AGENT, "default")  # the memo again, before the next append
    sent = {
        p.function_call.id
        for c in build_contents(ctx, AGENT, "default")
        for p in c.parts or []
        if p.function_call is not None
    }
    made = {f"c{i}" for i in range(next_id)}
    assert sent == made - set(open_ids)
    assert open_ids, "the seed should leave some calls open at the end"


async def test_a_failure_whose_message_storage_refuses_is_still_recorded(
    services: Services,
) -> None:
    """A NUL or a lone surrogate in an exception's text (issue 26: both are refused on every
    write) must not cost the failed run its error event and its answers to open calls."""

    def broken(tool_context: ToolContext) -> str:
        """Fails with a message the database cannot keep as it is."""
        del tool_context
        raise RuntimeError("bad\x00byte \ud800 here")

    agent = LlmAgent(
        name=AGENT,
        model=ScriptedLlm(rules=[Rule(when_user="go", call=("broken", {}))]),
        tools=[broken],
    )
    runner = services.runner(agent)
    await services.sessions.create_session(app_name="app", user_id="u", session_id="s")
    message = types.Content(role="user", parts=[types.Part(text="go")])

    with pytest.raises(AgentdError):
        async for _ in runner.run_async(user_id="u", session_id="s", new_message=message):
            pass

    session = await services.sessions.get_session(app_name="app", user_id="u", session_id="s")
    assert session is not None
    *_, answers, failure = session.events
    assert failure.error_message is not None
    assert "bad\ufffdbyte" in failure.error_message
    (answer,) = answers.get_function_responses()
    assert answer.name == "broken"
    assert open_function_calls(session.events) == []
