"""build_contents remembers the last result per session, agent and branch, and is never stale."""

from google.genai import types

from app.agents import LlmAgent
from app.agents import contents as contents_module
from app.agents.contents import build_contents
from app.contexts.invocation import InvocationContext
from app.sessions.in_memory import InMemorySessionService
from app.sessions.models import Event, Session


def _event(author: str, text: str, branch: str | None = None) -> Event:
    role = "user" if author == "user" else "model"
    return Event(
        author=author,
        branch=branch,
        content=types.Content(role=role, parts=[types.Part(text=text)]),
    )


def _ctx(session: Session, agent: LlmAgent, branch: str | None = None) -> InvocationContext:
    return InvocationContext(
        session_service=InMemorySessionService(),
        invocation_id="i",
        agent=agent,
        session=session,
        branch=branch,
    )


def _from_scratch(ctx: InvocationContext, agent: str) -> list[types.Content]:
    contents_module._memo.clear()
    result = build_contents(ctx, agent, "default")
    contents_module._memo.clear()
    return result


def _texts(contents: list[types.Content]) -> list[str]:
    return [p.text or "" for c in contents for p in c.parts or []]


def test_appended_events_extend_the_remembered_contents_exactly() -> None:
    agent = LlmAgent(name="helper")
    session = Session(id="s", app_name="a", user_id="u")
    ctx = _ctx(session, agent)
    for turn in range(30):
        session.events.append(_event("user", f"q{turn}"))
        session.events.append(_event("other" if turn % 3 == 0 else "helper", f"a{turn}"))
        incremental = build_contents(ctx, "helper", "default")
        assert _texts(incremental) == _texts(_from_scratch(ctx, "helper"))
        # build_contents again, now from the memo, before the next append
        build_contents(ctx, "helper", "default")
    assert _texts(build_contents(ctx, "helper", "default"))[:3] == [
        "q0",
        "For context:",
        "[other] said: a0",
    ]


def test_a_recreated_session_with_the_same_ids_is_rebuilt_not_served_from_the_memo() -> None:
    agent = LlmAgent(name="helper")
    first = Session(id="s", app_name="a", user_id="u", events=[_event("user", "old")])
    assert _texts(build_contents(_ctx(first, agent), "helper", "default")) == ["old"]
    again = Session(
        id="s", app_name="a", user_id="u", events=[_event("user", "new"), _event("user", "x")]
    )
    assert _texts(build_contents(_ctx(again, agent), "helper", "default")) == ["new", "x"]


def test_editing_the_returned_list_does_not_change_the_next_result() -> None:
    agent = LlmAgent(name="helper")
    session = Session(id="s2", app_name="a", user_id="u", events=[_event("user", "hi")])
    ctx = _ctx(session, agent)
    first = build_contents(ctx, "helper", "default")
    first.clear()
    first.append(types.Content(role="user", parts=[types.Part(text="injected")]))
    assert _texts(build_contents(ctx, "helper", "default")) == ["hi"]


def test_agents_and_branches_have_their_own_contents() -> None:
    session = Session(
        id="s3",
        app_name="a",
        user_id="u",
        events=[_event("user", "q"), _event("left", "l", branch="root.left")],
    )
    left = build_contents(_ctx(session, LlmAgent(name="left"), "root.left"), "left", "default")
    right = build_contents(_ctx(session, LlmAgent(name="right"), "root.right"), "right", "default")
    assert _texts(left) == ["q", "l"]
    assert _texts(right) == ["q"]


def _tool_turn(turn: int) -> list[Event]:
    """A question, the model's call, the tool's response and the answer, with seqs."""
    call = types.FunctionCall(id=f"c{turn}", name="lookup", args={"n": turn})
    response = types.FunctionResponse(id=f"c{turn}", name="lookup", response={"n": turn})
    return [
        _event("user", f"q{turn}"),
        Event(
            author="helper",
            content=types.Content(role="model", parts=[types.Part(function_call=call)]),
        ),
        Event(
            author="helper",
            content=types.Content(role="user", parts=[types.Part(function_response=response)]),
        ),
        _event("helper", f"a{turn}"),
    ]


def test_a_history_that_lets_go_of_its_oldest_events_keeps_its_memo_and_starts_at_a_turn() -> None:
    # A session past AGENTD_MAX_SESSION_EVENTS is read as its latest events: the window slides
    # by a turn a turn, and once cut mid-turn. The memo must follow it (not rebuild every turn)
    # and never hand the model a response whose call was let go.
    agent = LlmAgent(name="helper")
    everything: list[Event] = []
    window = 10
    session = Session(id="s", app_name="a", user_id="u")
    ctx = _ctx(session, agent)
    conversions = 0
    counting = True
    real_convert = contents_module._convert

    def counting_convert(*args, **kwargs):  # type: ignore[no-untyped-def]
        nonlocal conversions
        result = real_convert(*args, **kwargs)
        if counting:
            conversions += len(result[0])
        return result

    contents_module._memo.clear()
    contents_module._convert = counting_convert
    try:
        for turn in range(12):
            for event in _tool_turn(turn):
                event.seq = len(everything) + 1
                everything.append(event)
            session.events = everything[-window:]  # cut mid-turn on purpose (10 = 2.5 turns)
            incremental = build_contents(ctx, "helper", "default")
            kept = dict(contents_module._memo)
            counting = False
            assert _texts(incremental) == _texts(_from_scratch(ctx, "helper"))
            counting = True
            contents_module._memo.update(kept)
            first = incremental[0]
            assert first.role == "user"
            assert first.parts is not None
            assert first.parts[0].text is not None
            assert first.parts[0].text.startswith("q")
    finally:
        contents_module._convert = real_convert
    # Each turn's 4 contents converted once: the memo followed the window (a rebuild per turn
    # would convert the whole window, 10 a turn).
    assert conversions == 4 * 12
