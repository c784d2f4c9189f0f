"""Issue 18: what an AgentTool's wrapped agent waits for reaches the client and comes back.

A long-running call or a credential request the wrapped agent ends waiting for is listed by the
calling agent's waiting event (the inner calls themselves: the client answers the inner tool),
the invocation waits, and the client's answer continues the wrapped agent from where it stopped
(it does not start over); the calling model then gets the AgentTool's final answer and never
sees the inner calls or their answers.
"""

from typing import Any

from google.genai import types

from app.agents import LlmAgent
from app.auth import APIKey, APIKeyIn, AuthConfig, AuthCredential, AuthCredentialTypes
from app.runners import InMemoryRunner
from app.sessions.client_calls import pending_client_calls
from app.sessions.models import Event
from app.tools import AgentTool, LongRunningFunctionTool
from app.tools.tool_context import ToolContext
from tests.engine.conftest import Services
from tests.engine.helpers import ScriptModel, calls_response, run_turn, text_response

CONFIG = AuthConfig(
    auth_scheme=APIKey(in_=APIKeyIn.header, name="X-Api-Key"),
    raw_auth_credential=AuthCredential(auth_type=AuthCredentialTypes.API_KEY),
)


class Jobs:
    """A long-running tool (its result comes from the client) and a credential-protected one."""

    def __init__(self) -> None:
        self.started: list[str] = []
        self.fetches: list[str | None] = []

    def start_job(self, name: str) -> None:
        """Start the batch job `name`; its result arrives later."""
        self.started.append(name)

    def fetch_report(self, tool_context: ToolContext) -> dict[str, Any]:
        """Fetch the protected report."""
        credential = tool_context.get_auth_response(CONFIG)
        self.fetches.append(credential.api_key if credential else None)
        if credential is None:
            tool_context.request_credential(CONFIG)
            return {"status": "pending"}
        return {"report": f"report read with {credential.api_key}"}


def _respond(call_id: str, name: str, response: dict[str, Any]) -> types.Content:
    return types.Content(
        role="user",
        parts=[
            types.Part(
                function_response=types.FunctionResponse(id=call_id, name=name, response=response)
            )
        ],
    )


async def _send(runner: Any, message: types.Content, invocation_id: str) -> list[Event]:
    return [
        e
        async for e in runner.run_invocation(
            user_id="u", session_id="s", new_message=message, invocation_id=invocation_id
        )
    ]


def _seen(model: ScriptModel, request: int = -1) -> list[str]:
    """What one model request held: calls and responses by name, texts."""
    seen = []
    for content in model.requests[request].contents:
        for part in content.parts or []:
            if part.function_call:
                seen.append(f"call:{part.function_call.name}")
            elif part.function_response:
                seen.append(f"response:{part.function_response.name}")
    return seen


def _all_names(model: ScriptModel) -> set[str]:
    return {name.split(":", 1)[1] for i in range(len(model.requests)) for name in _seen(model, i)}


def _worker(jobs: Jobs, model: ScriptModel) -> LlmAgent:
    return LlmAgent(
        name="worker",
        description="Runs batch jobs and reads reports.",
        model=model,
        tools=[LongRunningFunctionTool(jobs.start_job), jobs.fetch_report],
    )


async def _session(runner: Any) -> None:
    await runner.session_service.create_session(app_name="app", user_id="u", session_id="s")


async def _pending(runner: Any, invocation_id: str) -> list[Any]:
    session = await runner.session_service.get_session(app_name="app", user_id="u", session_id="s")
    assert session is not None
    return pending_client_calls(session.events, invocation_id)


async def test_a_long_running_call_inside_an_agent_tool_waits_for_the_clients_result(
    services: Services,
) -> None:
    jobs = Jobs()
    worker_model = ScriptModel(
        replies=[calls_response(("start_job", {"name": "nightly"})), text_response("job done: 42")]
    )
    boss_model = ScriptModel(
        replies=[calls_response(("worker", {"request": "run nightly"})), text_response("all done")]
    )
    boss = LlmAgent(name="boss", model=boss_model, tools=[AgentTool(_worker(jobs, worker_model))])
    runner = services.runner(boss)
    await services.sessions.create_session(app_name="app", user_id="u", session_id="s")

    asked = await run_turn(runner, "run the nightly job")

    invocation_id = asked[0].invocation_id
    waiting = asked[-1]
    (inner,) = waiting.get_function_calls()
    assert (inner.name, inner.args) == ("start_job", {"name": "nightly"})
    assert waiting.long_running_tool_ids == [inner.id]
    (pending,) = await _pending(runner, invocation_id)
    assert (pending.kind, pending.call_id, pending.tool, pending.args) == (
        "result",
        inner.id,
        "start_job",
        {"name": "nightly"},
    )
    assert jobs.started == ["nightly"]
    assert len(boss_model.requests) == 1
    assert len(worker_model.requests) == 1

    done = await _send(runner, _respond(inner.id or "", "start_job", {"result": 42}), invocation_id)

    assert jobs.started == ["nightly"]  # the wrapped agent went on: nothing started twice
    assert len(worker_model.requests) == 2
    assert _seen(worker_model)[-2:] == ["call:start_job", "response:start_job"]
    (answer,) = done[1].get_function_responses()
    assert (answer.name, answer.response) == ("worker", {"result": "job done: 42"})
    assert done[-1].content
    assert done[-1].content.parts
    assert done[-1].content.parts[0].text == "all done"
    assert _seen(boss_model) == ["call:worker", "response:worker"]
    assert "start_job" not in _all_names(boss_model)
    assert await _pending(runner, invocation_id) == []


async def test_a_credential_inside_an_agent_tool_is_asked_of_the_client(
    services: Services,
) -> None:
    jobs = Jobs()
    worker_model = ScriptModel(
        replies=[calls_response(("fetch_report", {})), text_response("the report says hi")]
    )
    boss_model = ScriptModel(
        replies=[calls_response(("worker", {"request": "read it"})), text_response("read")]
    )
    boss = LlmAgent(name="boss", model=boss_model, tools=[AgentTool(_worker(jobs, worker_model))])
    runner = services.runner(boss)
    await services.sessions.create_session(app_name="app", user_id="u", session_id="s")

    asked = await run_turn(runner, "read the report")

    invocation_id = asked[0].invocation_id
    (pending,) = await _pending(runner, invocation_id)
    assert (pending.kind, pending.tool, pending.response_name) == (
        "credential",
        "fetch_report",
        "adk_request_credential",
    )
    request = next(c for c in asked[-1].get_function_calls() if c.name == "adk_request_credential")
    assert request.id == pending.call_id
    config = dict((request.args or {})["authConfig"])
    config["exchangedAuthCredential"] = {"authType": "apiKey", "apiKey": "k-123"}

    done = await _send(
        runner, _respond(request.id or "", "adk_request_credential", config), invocation_id
    )

    assert jobs.fetches == [None, "k-123"]  # the inner tool ran again, with the credential
    assert len(worker_model.requests) == 2
    (answer,) = done[1].get_function_responses()
    assert answer.response == {"result": "the report says hi"}
    assert _seen(boss_model) == ["call:worker", "response:worker"]
    assert not {"fetch_report", "adk_request_credential"} & _all_names(boss_model)
    assert await _pending(runner, invocation_id) == []


async def test_two_inner_results_answered_in_two_turns_reach_the_wrapped_model_together() -> None:
    jobs = Jobs()
    worker_model = ScriptModel(
        replies=[
            calls_response(("start_job", {"name": "a"}), ("start_job", {"name": "b"})),
            text_response("both done"),
        ]
    )
    boss_model = ScriptModel(
        replies=[calls_response(("worker", {"request": "a and b"})), text_response("fine")]
    )
    boss = LlmAgent(name="boss", model=boss_model, tools=[AgentTool(_worker(jobs, worker_model))])
    runner = InMemoryRunner(boss, app_name="app")
    await _session(runner)
    asked = await run_turn(runner, "run a and b")
    invocation_id = asked[0].invocation_id
    first, second = asked[-1].get_function_calls()

    partly = await _send(runner, _respond(first.id or "", "start_job", {"a": 1}), invocation_id)

    assert [c.id for c in partly[-1].get_function_calls()] == [second.id]  # still waiting
    assert [p.call_id for p in await _pending(runner, invocation_id)] == [second.id]
    assert len(worker_model.requests) == 1
    assert len(boss_model.requests) == 1

    await _send(runner, _respond(second.id or "", "start_job", {"b": 2}), invocation_id)

    assert jobs.started == ["a", "b"]
    assert _seen(worker_model)[-4:] == [
        "call:start_job",
        "call:start_job",
        "response:start_job",
        "response:start_job",
    ]
    assert _seen(boss_model) == ["call:worker", "response:worker"]
    assert await _pending(runner, invocation_id) == []


async def test_nested_agent_tools_pass_the_call_up_level_by_level() -> None:
    jobs = Jobs()
    worker_model = ScriptModel(
        replies=[calls_response(("start_job", {"name": "deep"})), text_response("deep done")]
    )
    middle_model = ScriptModel(
        replies=[calls_response(("worker", {"request": "go"})), text_response("middle done")]
    )
    boss_model = ScriptModel(
        replies=[calls_response(("middle", {"request": "go"})), text_response("boss done")]
    )
    middle = LlmAgent(
        name="middle",
        description="Delegates.",
        model=middle_model,
        tools=[AgentTool(_worker(jobs, worker_model))],
    )
    boss = LlmAgent(name="boss", model=boss_model, tools=[AgentTool(middle)])
    runner = InMemoryRunner(boss, app_name="app")
    await _session(runner)
    asked = await run_turn(runner, "go deep")
    invocation_id = asked[0].invocation_id
    (inner,) = asked[-1].get_function_calls()
    assert inner.name == "start_job"

    done = await _send(runner, _respond(inner.id or "", "start_job", {"ok": True}), invocation_id)

    assert jobs.started == ["deep"]
    assert [len(m.requests) for m in (worker_model, middle_model, boss_model)] == [2, 2, 2]
    assert done[-1].content
    assert done[-1].content.parts
    assert done[-1].content.parts[0].text == "boss done"
    assert "start_job" not in _all_names(middle_model) | _all_names(boss_model)
