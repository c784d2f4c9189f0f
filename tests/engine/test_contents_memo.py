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
