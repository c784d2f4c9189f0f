"""Tool credentials (issue 16, item 5): ADK's `adk_request_credential` round trip in the engine.

A tool that calls `request_credential` gets its function-response event, then the agent's
`adk_request_credential` event (ADK's shapes); the client's function response stores the
credential, runs that tool again (callbacks included, the step's other tools not) and the model
goes on; the model never sees the credential calls or their answers.
"""

from typing import Any

import pytest
from google.genai import types

from app.agents import LlmAgent
from app.auth import (
    APIKey,
    APIKeyIn,
    AuthConfig,
    AuthCredential,
    AuthCredentialTypes,
)
from app.auth.auth_credential import wire
from app.runners import InMemoryRunner
from app.sessions.models import Event
from app.tools.tool_context import ToolContext
from tests.engine.conftest import Services
from tests.engine.helpers import ScriptModel, calls_response, run_turn, text_response

CONFIG = AuthConfig(
    auth_scheme=APIKey(in_=APIKeyIn.header, name="X-Api-Key"),
    raw_auth_credential=AuthCredential(auth_type=AuthCredentialTypes.API_KEY),
)


class Tools:
    """Two tools of one step: `fetch_data` needs a credential, `count_things` does not."""

    def __init__(self) -> None:
        self.runs: list[str] = []
        self.callbacks: list[str] = []

    def fetch_data(self, query: str, tool_context: ToolContext) -> dict[str, Any]:
        """Fetch data for `query` from the protected API."""
        self.runs.append("fetch_data")
        credential = tool_context.get_auth_response(CONFIG)
        if credential is None:
            tool_context.request_credential(CONFIG)
            return {"status": "pending", "message": "Waiting for the user's credential."}
        return {"data": f"{query} with key {credential.api_key}"}

    def count_things(self) -> dict[str, Any]:
        """Count the things."""
        self.runs.append("count_things")
        return {"count": 3}

    def before_tool(self, tool: Any, args: dict[str, Any], tool_context: ToolContext) -> None:
        del args, tool_context
        self.callbacks.append(tool.name)


def _agent(tools: Tools, model: ScriptModel) -> LlmAgent:
    return LlmAgent(
        name="helper",
        model=model,
        tools=[tools.fetch_data, tools.count_things],
        before_tool_callback=tools.before_tool,
    )


def _answer(auth_event: Event, api_key: str) -> types.Content:
    """What an ADK client sends back: the AuthConfig with exchangedAuthCredential filled in."""
    assert auth_event.content is not None
    parts = []
    for part in auth_event.content.parts or []:
        call = part.function_call
        assert call is not None
        config = dict((call.args or {})["authConfig"])
        config["exchangedAuthCredential"] = {"authType": "apiKey", "apiKey": api_key}
        response = types.FunctionResponse(id=call.id, name=call.name, response=config)
        parts.append(types.Part(function_response=response))
    return types.Content(role="user", parts=parts)


def _names_seen(model: ScriptModel) -> list[str]:
    names = []
    for request in model.requests:
        for content in request.contents:
            for part in content.parts or []:
                if part.function_call:
                    names.append(f"call:{part.function_call.name}")
                if part.function_response:
                    names.append(f"response:{part.function_response.name}")
    return names


def _model() -> ScriptModel:
    return ScriptModel(
        replies=[
            calls_response(("fetch_data", {"query": "sales"}), ("count_things", {})),
            text_response("Here is your data."),
        ]
    )


async def _ask(runner: InMemoryRunner) -> list[Event]:
    await runner.session_service.create_session(app_name="app", user_id="u", session_id="s")
    return await run_turn(runner, "get me the sales data")


async def test_a_tool_asking_for_a_credential_yields_adk_request_credential() -> None:
    tools, model = Tools(), _model()
    runner = InMemoryRunner(_agent(tools, model), app_name="app")
    events = await _ask(runner)

    assert [e.author for e in events] == ["user", "helper", "helper", "helper"]
    call_event, response_event, auth_event = events[1:]
    fetch_id = call_event.get_function_calls()[0].id
    requested = wire(CONFIG)
    assert response_event.actions.requested_auth_configs == {fetch_id: requested}
    stored = response_event.model_dump(mode="json", by_alias=True, exclude_none=True)
    assert stored["actions"]["requestedAuthConfigs"] == {fetch_id: requested}
    assert requested["credentialKey"].startswith("adk_apiKey_")
    assert requested["authScheme"] == {"type": "apiKey", "in": "header", "name": "X-Api-Key"}

    (call,) = auth_event.get_function_calls()
    assert call.name == "adk_request_credential"
    assert call.id
    assert call.id.startswith("adk-")
    assert call.id != fetch_id
    assert call.args == {"functionCallId": fetch_id, "authConfig": requested}
    assert auth_event.long_running_tool_ids == [call.id]
    assert auth_event.invocation_id == response_event.invocation_id
    assert auth_event.is_final_response()
    assert len(model.requests) == 1  # the invocation stops and waits for the client


async def test_the_answer_reruns_only_the_tool_that_asked_and_it_gets_the_credential() -> None:
    tools, model = Tools(), _model()
    runner = InMemoryRunner(_agent(tools, model), app_name="app")
    asked = await _ask(runner)
    fetch_id = asked[1].get_function_calls()[0].id

    events = [
        e
        async for e in runner.run_invocation(
            user_id="u",
            session_id="s",
            new_message=_answer(asked[-1], "k-123"),
            invocation_id=asked[0].invocation_id,
        )
    ]

    assert [e.author for e in events] == ["user", "helper", "helper"]
    assert {e.invocation_id for e in events} == {asked[0].invocation_id}
    (response,) = events[1].get_function_responses()
    assert response.id == fetch_id
    assert response.response == {"data": "sales with key k-123"}
    assert not events[1].actions.requested_auth_configs
    assert events[2].content
    assert events[2].content.parts
    assert events[2].content.parts[0].text == "Here is your data."
    assert tools.runs == ["fetch_data", "count_things", "fetch_data"]
    assert tools.callbacks == ["fetch_data", "count_things", "fetch_data"]
    # The credential lived in temp state only: nothing stored carries it.
    session = await runner.session_service.get_session(app_name="app", user_id="u", session_id="s")
    assert session is not None
    assert not any(key.startswith("temp:") for key in session.state)
    assert all("k-123" not in str(e.actions.state_delta) for e in session.events)


async def test_the_model_never_sees_the_credential_calls_and_sees_the_latest_answer() -> None:
    tools, model = Tools(), _model()
    runner = InMemoryRunner(_agent(tools, model), app_name="app")
    asked = await _ask(runner)
    async for _ in runner.run_invocation(
        user_id="u", session_id="s", new_message=_answer(asked[-1], "k-9")
    ):
        pass

    assert len(model.requests) == 2
    assert "call:adk_request_credential" not in _names_seen(model)
    assert "response:adk_request_credential" not in _names_seen(model)
    contents = model.requests[1].contents
    responses = [
        p.function_response for c in contents for p in c.parts or [] if p.function_response
    ]
    # One answer per call, the fetch answered by its latest (credentialed) result, and the
    # answers right after the calls, as one turn.
    assert [(r.name, r.response) for r in responses] == [
        ("fetch_data", {"data": "sales with key k-9"}),
        ("count_things", {"count": 3}),
    ]
    roles = [c.role for c in contents]
    assert roles == ["user", "model", "user"]


async def test_asking_again_after_a_wrong_answer_sends_a_new_request() -> None:
    """A tool that still has no usable credential asks again: a new adk_request_credential."""

    def strict(tool_context: ToolContext) -> dict[str, Any]:
        """Needs the key 'right'."""
        credential = tool_context.get_auth_response(CONFIG)
        if credential is None or credential.api_key != "right":
            tool_context.request_credential(CONFIG)
            return {"status": "pending"}
        return {"ok": True}

    model = ScriptModel(replies=[calls_response(("strict", {})), text_response("ok")])
    runner = InMemoryRunner(LlmAgent(name="helper", model=model, tools=[strict]), app_name="app")
    asked = await _ask(runner)
    again = [
        e
        async for e in runner.run_invocation(
            user_id="u", session_id="s", new_message=_answer(asked[-1], "wrong")
        )
    ]
    assert [e.author for e in again] == ["user", "helper", "helper"]
    (call,) = again[-1].get_function_calls()
    assert call.name == "adk_request_credential"
    assert call.id != asked[-1].get_function_calls()[0].id
    assert len(model.requests) == 1
    done = [
        e
        async for e in runner.run_invocation(
            user_id="u", session_id="s", new_message=_answer(again[-1], "right")
        )
    ]
    assert done[1].get_function_responses()[0].response == {"ok": True}
    assert done[-1].content
    assert done[-1].content.parts
    assert done[-1].content.parts[0].text == "ok"


async def test_a_sub_agent_that_asked_is_the_one_resumed(services: Services) -> None:
    """The answer goes to the agent whose tool asked (ADK's runner picks it by the call)."""
    tools = Tools()
    model = ScriptModel(
        replies=[calls_response(("fetch_data", {"query": "q"})), text_response("fin")]
    )
    worker = LlmAgent(
        name="worker", model=model, tools=[tools.fetch_data], disallow_transfer_to_parent=True
    )
    root = LlmAgent(
        name="root",
        model=ScriptModel(
            replies=[calls_response(("transfer_to_agent", {"agent_name": "worker"}))]
        ),
        sub_agents=[worker],
    )
    runner = services.runner(root)
    await services.sessions.create_session(app_name="app", user_id="u", session_id="s")
    asked = await run_turn(runner, "hello")
    assert asked[-1].author == "worker"
    done = [
        e
        async for e in runner.run_invocation(
            user_id="u", session_id="s", new_message=_answer(asked[-1], "k")
        )
    ]
    assert [e.author for e in done] == ["user", "worker", "worker"]
    assert done[1].get_function_responses()[0].response == {"data": "q with key k"}


@pytest.mark.parametrize("value", [None, {"authType": "apiKey", "apiKey": "x"}])
def test_get_auth_response_reads_temp_state(value: Any) -> None:
    from app.contexts.invocation import InvocationContext
    from app.sessions.in_memory import InMemorySessionService
    from app.sessions.models import Session

    session = Session(id="s", app_name="a", user_id="u")
    if value is not None:
        session.state["temp:" + (CONFIG.credential_key or "")] = value
    ctx = InvocationContext(
        session_service=InMemorySessionService(),
        invocation_id="i",
        agent=LlmAgent(name="x"),
        session=session,
    )
    credential = ToolContext(ctx, function_call_id="c").get_auth_response(CONFIG)
    assert credential == (
        None if value is None else AuthCredential(auth_type="apiKey", api_key="x")
    )
