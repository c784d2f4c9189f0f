"""Tool confirmations (issue 18, engine part): ADK's `adk_request_confirmation` round trip.

A tool with `require_confirmation` (or one calling `tool_context.request_confirmation`) answers
its call with ADK's "requires confirmation" error, the agent yields one `adk_request_confirmation`
call per request and the invocation ends; the client's answer runs the confirmed calls (once),
answers denied ones with ADK's refusal without running them, and the model goes on. Partial
answers to parallel calls are kept until all are in; the model never sees the requests.
"""

import json
from typing import Any

from google.genai import types

from app.agents import LlmAgent
from app.agents.loop_agent import LoopAgent
from app.agents.parallel_agent import ParallelAgent
from app.agents.sequential_agent import SequentialAgent
from app.runners import InMemoryRunner
from app.sessions.client_calls import PendingCall, is_waiting_event, pending_client_calls
from app.sessions.models import Event
from app.tools import AgentTool, FunctionTool, LongRunningFunctionTool, ToolConfirmation
from app.tools.tool_context import ToolContext
from tests.engine.conftest import Services
from tests.engine.helpers import ScriptModel, calls_response, run_turn, text_response

REQUIRED = {"error": "This tool call requires confirmation, please approve or reject."}
REJECTED = {"error": "This tool call is rejected."}
CONFIRM = "adk_request_confirmation"


class Bank:
    """A tool with a side effect the tests count."""

    def __init__(self) -> None:
        self.transfers: list[int] = []

    def transfer(self, amount: int) -> dict[str, Any]:
        """Transfer `amount` euros."""
        self.transfers.append(amount)
        return {"transferred": amount}


def _answer(*answers: tuple[str, Any]) -> types.Content:
    """A user message answering `adk_request_confirmation` calls: (call id, response)."""
    return types.Content(
        role="user",
        parts=[
            types.Part(
                function_response=types.FunctionResponse(
                    id=call_id,
                    name=CONFIRM,
                    response=response if isinstance(response, dict) else {"confirmed": response},
                )
            )
            for call_id, response in answers
        ],
    )


async def _send(
    runner: InMemoryRunner | Any, message: types.Content, invocation_id: str | None = None
) -> list[Event]:
    return [
        e
        async for e in runner.run_invocation(
            user_id="u", session_id="s", new_message=message, invocation_id=invocation_id
        )
    ]


def _waiting(events: list[Event]) -> Event:
    """The last event that asks the client for something (ADK streams a confirmation request
    before the function response it was built from, so it is not always the last event)."""
    return next(e for e in reversed(events) if is_waiting_event(e))


def _request_ids(event: Event) -> list[str]:
    return [c.id or "" for c in event.get_function_calls() if c.name == CONFIRM]


def _responses_seen(model: ScriptModel, request: int) -> list[tuple[str | None, Any]]:
    return [
        (p.function_response.name, p.function_response.response)
        for c in model.requests[request].contents
        for p in c.parts or []
        if p.function_response
    ]


def _names_seen(model: ScriptModel) -> set[str]:
    names = set()
    for request in model.requests:
        for content in request.contents:
            for part in content.parts or []:
                if part.function_call and part.function_call.name:
                    names.add(part.function_call.name)
                if part.function_response and part.function_response.name:
                    names.add(part.function_response.name)
    return names


def _bank_agent(bank: Bank, model: ScriptModel, **kwargs: Any) -> LlmAgent:
    return LlmAgent(
        name="teller",
        model=model,
        tools=[FunctionTool(bank.transfer, require_confirmation=True)],
        **kwargs,
    )


async def _start(runner: Any, text: str = "send 50 euros") -> list[Event]:
    await runner.session_service.create_session(app_name="app", user_id="u", session_id="s")
    return await run_turn(runner, text)


async def test_confirmed_call_runs_once_and_its_result_reaches_the_model(
    services: Services,
) -> None:
    bank = Bank()
    model = ScriptModel(
        replies=[calls_response(("transfer", {"amount": 50})), text_response("Sent.")]
    )
    runner = services.runner(_bank_agent(bank, model))
    asked = await _start(runner)

    assert [e.author for e in asked] == ["user", "teller", "teller", "teller"]
    call_event, request_event, response_event = asked[1:]  # ADK streams the request first
    (call,) = call_event.get_function_calls()
    assert response_event.get_function_responses()[0].response == REQUIRED
    assert bank.transfers == []
    (request_id,) = _request_ids(request_event)
    assert request_event.long_running_tool_ids == [request_id]
    assert request_event.is_final_response()
    assert len(model.requests) == 1

    done = await _send(runner, _answer((request_id, True)), asked[0].invocation_id)

    assert [e.author for e in done] == ["user", "teller", "teller"]
    assert {e.invocation_id for e in done} == {asked[0].invocation_id}
    (result,) = done[1].get_function_responses()
    assert (result.id, result.response) == (call.id, {"transferred": 50})
    assert done[2].content
    assert done[2].content.parts
    assert done[2].content.parts[0].text == "Sent."
    assert bank.transfers == [50]
    # The model saw the call once, answered once by its final result; no framework calls.
    assert _responses_seen(model, 1) == [("transfer", {"transferred": 50})]
    assert CONFIRM not in _names_seen(model)
    session = await services.sessions.get_session(app_name="app", user_id="u", session_id="s")
    assert session is not None
    assert pending_client_calls(session.events, asked[0].invocation_id) == []

    # A replayed answer never runs the tool again, nor calls the model.
    replay = await _send(runner, _answer((request_id, True)), asked[0].invocation_id)
    assert [e.author for e in replay] == ["user"]
    assert bank.transfers == [50]
    assert len(model.requests) == 2


async def test_denied_call_never_runs_and_the_model_sees_the_refusal(services: Services) -> None:
    bank = Bank()
    calls: list[str] = []

    def before_tool(tool: Any, args: dict[str, Any], tool_context: ToolContext) -> None:
        del args, tool_context
        calls.append(tool.name)

    model = ScriptModel(
        replies=[calls_response(("transfer", {"amount": 50})), text_response("Not sent.")]
    )
    runner = services.runner(_bank_agent(bank, model, before_tool_callback=before_tool))
    asked = await _start(runner)
    (request_id,) = _request_ids(_waiting(asked))

    done = await _send(runner, _answer((request_id, False)), asked[0].invocation_id)

    assert bank.transfers == []
    assert calls == ["transfer"]  # the first (asking) run only; a denied call reaches nothing
    assert done[1].get_function_responses()[0].response == REJECTED
    assert _responses_seen(model, 1) == [("transfer", REJECTED)]
    assert done[-1].content
    assert done[-1].content.parts
    assert done[-1].content.parts[0].text == "Not sent."


async def test_a_malformed_answer_is_a_denial_and_adks_wrapper_is_understood() -> None:
    bank = Bank()
    model = ScriptModel(
        replies=[
            calls_response(("transfer", {"amount": 1})),
            text_response("ok"),
            calls_response(("transfer", {"amount": 2})),
            text_response("ok"),
        ]
    )
    runner = InMemoryRunner(_bank_agent(bank, model), app_name="app")
    asked = await _start(runner)
    (request_id,) = _request_ids(_waiting(asked))
    done = await _send(runner, _answer((request_id, {"confirmed": "yes"})))
    assert done[1].get_function_responses()[0].response == REJECTED
    assert bank.transfers == []

    asked = await run_turn(runner, "send 2")
    (request_id,) = _request_ids(_waiting(asked))
    wrapped = {"response": json.dumps({"confirmed": True})}
    done = await _send(runner, _answer((request_id, wrapped)))
    assert done[1].get_function_responses()[0].response == {"transferred": 2}
    assert bank.transfers == [2]


async def test_request_confirmation_from_a_tool_carries_hint_and_payload_both_ways() -> None:
    seen: list[ToolConfirmation | None] = []

    def book_flight(city: str, tool_context: ToolContext) -> dict[str, Any]:
        """Book a flight to `city`."""
        seen.append(tool_context.tool_confirmation)
        if tool_context.tool_confirmation is None:
            tool_context.request_confirmation(
                hint="Pick a seat class.", payload={"seat": "economy", "options": [1, 2]}
            )
            return {"status": "waiting for the seat class"}
        payload: dict[str, Any] = tool_context.tool_confirmation.payload or {}
        return {"booked": city, "seat": payload["seat"]}

    model = ScriptModel(
        replies=[
            calls_response(("book_flight", {"city": "Oslo"})),
            text_response("Which seat class?"),
            text_response("ok"),
        ]
    )
    runner = InMemoryRunner(
        LlmAgent(name="agent", model=model, tools=[book_flight]), app_name="app"
    )
    asked = await _start(runner, "book Oslo")
    # ADK (hitl_request_confirmation.json): the request streams first, and no summarization is
    # skipped, so the model speaks on the tool's own answer in the same run.
    call_event, request_event, response_event, spoken = asked[1:]
    assert spoken.content is not None
    assert spoken.content.parts
    assert spoken.content.parts[0].text == "Which seat class?"
    (call,) = call_event.get_function_calls()
    requested = {
        "hint": "Pick a seat class.",
        "confirmed": False,
        "payload": {"seat": "economy", "options": [1, 2]},
    }
    assert response_event.actions.requested_tool_confirmations == {call.id: requested}
    (request,) = request_event.get_function_calls()
    assert request.args == {
        "originalFunctionCall": {"id": call.id, "args": {"city": "Oslo"}, "name": "book_flight"},
        "toolConfirmation": requested,
    }
    session = await runner.session_service.get_session(app_name="app", user_id="u", session_id="s")
    assert session is not None
    pending = pending_client_calls(session.events, asked[0].invocation_id)
    assert pending == [
        PendingCall(
            call_id=request.id or "",
            kind="confirmation",
            agent="agent",
            response_name=CONFIRM,
            original_call_id=call.id,
            tool="book_flight",
            args={"city": "Oslo"},
            hint="Pick a seat class.",
            payload={"seat": "economy", "options": [1, 2]},
        )
    ]

    done = await _send(
        runner, _answer((request.id or "", {"confirmed": True, "payload": {"seat": "business"}}))
    )
    assert seen == [None, ToolConfirmation(confirmed=True, payload={"seat": "business"})]
    assert done[1].get_function_responses()[0].response == {"booked": "Oslo", "seat": "business"}
    assert not done[1].actions.requested_tool_confirmations
    assert _responses_seen(model, 1) == [("book_flight", {"status": "waiting for the seat class"})]
    assert _responses_seen(model, 2) == [("book_flight", {"booked": "Oslo", "seat": "business"})]


async def test_a_callable_rule_asks_only_above_a_threshold() -> None:
    bank = Bank()
    rule_calls: list[tuple[int, bool]] = []

    async def above_limit(amount: int, tool_context: ToolContext) -> bool:
        rule_calls.append((amount, tool_context.tool_confirmation is not None))
        return amount > 100

    model = ScriptModel(
        replies=[
            calls_response(("transfer", {"amount": 50}), ("transfer", {"amount": 500})),
            text_response("ok"),
        ]
    )
    agent = LlmAgent(
        name="teller",
        model=model,
        tools=[FunctionTool(bank.transfer, require_confirmation=above_limit)],
    )
    runner = InMemoryRunner(agent, app_name="app")
    asked = await _start(runner)
    responses = asked[3].get_function_responses()  # after the request, as ADK streams them
    assert [r.response for r in responses] == [{"transferred": 50}, REQUIRED]
    assert bank.transfers == [50]
    (request,) = asked[2].get_function_calls()
    assert request.args
    assert request.args["originalFunctionCall"]["args"] == {"amount": 500}

    done = await _send(runner, _answer((request.id or "", True)))
    assert bank.transfers == [50, 500]
    assert [r.response for r in done[1].get_function_responses()] == [{"transferred": 500}]
    assert rule_calls == [(50, False), (500, False), (500, True)]
    assert _responses_seen(model, 1) == [
        ("transfer", {"transferred": 50}),
        ("transfer", {"transferred": 500}),
    ]


async def test_parallel_calls_answered_in_two_turns_reach_the_model_in_one_step(
    services: Services,
) -> None:
    bank = Bank()
    model = ScriptModel(
        replies=[
            calls_response(("transfer", {"amount": 1}), ("transfer", {"amount": 2})),
            text_response("Done."),
        ]
    )
    runner = services.runner(_bank_agent(bank, model))
    asked = await _start(runner)
    invocation = asked[0].invocation_id
    first, second = _request_ids(_waiting(asked))
    assert _waiting(asked).long_running_tool_ids == [first, second]

    partial = await _send(runner, _answer((second, False)), invocation)

    # Nothing ran, the model was not called, and the invocation's last event lists what is left.
    assert bank.transfers == []
    assert len(model.requests) == 1
    assert [e.author for e in partial] == ["user", "teller"]
    assert _request_ids(partial[-1]) == [first]
    assert partial[-1].long_running_tool_ids == [first]
    session = await services.sessions.get_session(app_name="app", user_id="u", session_id="s")
    assert session is not None
    assert [p.call_id for p in pending_client_calls(session.events, invocation)] == [first]

    done = await _send(runner, _answer((first, True)), invocation)

    assert bank.transfers == [1]
    assert [e.author for e in done] == ["user", "teller", "teller"]
    assert [r.response for r in done[1].get_function_responses()] == [{"transferred": 1}, REJECTED]
    assert len(model.requests) == 2
    assert _responses_seen(model, 1) == [("transfer", {"transferred": 1}), ("transfer", REJECTED)]
    # The call and its two answers are one model turn and one user turn.
    assert [c.role for c in model.requests[1].contents] == ["user", "model", "user"]
    session = await services.sessions.get_session(app_name="app", user_id="u", session_id="s")
    assert session is not None
    assert pending_client_calls(session.events, invocation) == []


async def test_wire_shapes_of_the_request_by_alias() -> None:
    bank = Bank()
    model = ScriptModel(replies=[calls_response(("transfer", {"amount": 7})), text_response("ok")])
    runner = InMemoryRunner(_bank_agent(bank, model), app_name="app")
    asked = await _start(runner)
    call_event, request_event, response_event = asked[1:]  # ADK streams the request first
    (call,) = call_event.get_function_calls()
    hint = (
        "Please approve or reject the tool call transfer() by responding with a "
        "FunctionResponse with an expected ToolConfirmation payload."
    )

    stored = response_event.model_dump(mode="json", by_alias=True, exclude_none=True)
    assert stored["actions"]["requestedToolConfirmations"] == {
        call.id: {"hint": hint, "confirmed": False}
    }
    assert stored["actions"]["skipSummarization"] is True
    assert stored["content"]["parts"][0]["functionResponse"] == {
        "id": call.id,
        "name": "transfer",
        "response": REQUIRED,
    }
    wire = request_event.model_dump(mode="json", by_alias=True, exclude_none=True)
    (request_id,) = wire["longRunningToolIds"]
    assert request_id.startswith("adk-")
    assert wire["author"] == "teller"
    assert wire["content"] == {
        "role": "model",
        "parts": [
            {
                "functionCall": {
                    "id": request_id,
                    "name": CONFIRM,
                    "args": {
                        "originalFunctionCall": {
                            "id": call.id,
                            "args": {"amount": 7},
                            "name": "transfer",
                        },
                        "toolConfirmation": {"hint": hint, "confirmed": False},
                    },
                }
            }
        ],
    }
    assert ToolConfirmation.model_validate({"hint": "h", "confirmed": True}).wire() == {
        "hint": "h",
        "confirmed": True,
    }


async def test_a_sub_agent_that_asked_is_the_one_resumed(services: Services) -> None:
    bank = Bank()
    model = ScriptModel(replies=[calls_response(("transfer", {"amount": 9})), text_response("fin")])
    worker = LlmAgent(
        name="worker",
        model=model,
        tools=[FunctionTool(bank.transfer, require_confirmation=True)],
        disallow_transfer_to_parent=True,
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
    asked = await run_turn(runner, "pay 9")
    assert asked[-1].author == "worker"
    (request_id,) = _request_ids(_waiting(asked))

    done = await _send(runner, _answer((request_id, True)), asked[0].invocation_id)

    assert [e.author for e in done] == ["user", "worker", "worker"]
    assert done[1].get_function_responses()[0].response == {"transferred": 9}
    assert bank.transfers == [9]


async def test_a_sequential_member_that_asked_is_resumed_and_the_sequence_goes_on(
    services: Services,
) -> None:
    bank = Bank()
    model = ScriptModel(
        replies=[calls_response(("transfer", {"amount": 3})), text_response("paid")]
    )
    payer = LlmAgent(
        name="payer", model=model, tools=[FunctionTool(bank.transfer, require_confirmation=True)]
    )
    noter = LlmAgent(name="noter", model=ScriptModel(replies=[text_response("noted")]))
    pipeline = SequentialAgent(name="pipeline", sub_agents=[payer, noter])
    runner = services.runner(pipeline)
    await services.sessions.create_session(app_name="app", user_id="u", session_id="s")
    asked = await run_turn(runner, "pay 3")
    assert [e.author for e in asked] == ["user", "payer", "payer", "payer"]  # noter waits
    (request_id,) = _request_ids(_waiting(asked))

    done = await _send(runner, _answer((request_id, True)), asked[0].invocation_id)

    # The member that asked resumes (the runner picks it by the answered call) and finishes;
    # then the members after it run, as the sequence would have without the wait.
    assert [e.author for e in done] == ["user", "payer", "payer", "noter"]
    assert done[1].get_function_responses()[0].response == {"transferred": 3}
    assert bank.transfers == [3]
    assert done[2].content
    assert done[2].content.parts
    assert done[2].content.parts[0].text == "paid"
    assert done[3].content
    assert done[3].content.parts
    assert done[3].content.parts[0].text == "noted"


async def test_pending_client_calls_lists_confirmations_and_long_running_results() -> None:
    bank = Bank()

    def start_job(name: str) -> None:
        """Start a batch job; its result comes later."""
        del name

    model = ScriptModel(
        replies=[
            calls_response(("transfer", {"amount": 4}), ("start_job", {"name": "nightly"})),
            text_response("ok"),
        ]
    )
    agent = LlmAgent(
        name="teller",
        model=model,
        tools=[
            FunctionTool(bank.transfer, require_confirmation=True),
            LongRunningFunctionTool(start_job),
        ],
    )
    runner = InMemoryRunner(agent, app_name="app")
    asked = await _start(runner)
    transfer_call, job_call = asked[1].get_function_calls()
    (request_id,) = _request_ids(_waiting(asked))
    assert _waiting(asked).long_running_tool_ids == [request_id, job_call.id]
    session = await runner.session_service.get_session(app_name="app", user_id="u", session_id="s")
    assert session is not None
    pending = pending_client_calls(session.events, asked[0].invocation_id)
    assert [(p.kind, p.call_id, p.original_call_id, p.tool, p.args) for p in pending] == [
        ("confirmation", request_id, transfer_call.id, "transfer", {"amount": 4}),
        ("result", job_call.id, job_call.id, "start_job", {"name": "nightly"}),
    ]
    assert pending[1].response_name == "start_job"
    assert pending_client_calls(session.events, "another-invocation") == []


def _agent_tool_setup(bank: Bank) -> tuple[LlmAgent, ScriptModel, ScriptModel]:
    teller_model = ScriptModel(
        replies=[calls_response(("transfer", {"amount": 5})), text_response("teller paid")]
    )
    teller = LlmAgent(
        name="teller",
        description="Moves money.",
        model=teller_model,
        tools=[FunctionTool(bank.transfer, require_confirmation=True)],
    )
    boss_model = ScriptModel(
        replies=[calls_response(("teller", {"request": "pay 5"})), text_response("boss done")]
    )
    boss = LlmAgent(name="boss", model=boss_model, tools=[AgentTool(teller)])
    return boss, boss_model, teller_model


async def test_a_confirmation_inside_an_agent_tool_is_asked_by_the_calling_agent(
    services: Services,
) -> None:
    bank = Bank()
    boss, boss_model, teller_model = _agent_tool_setup(bank)
    runner = services.runner(boss)
    await services.sessions.create_session(app_name="app", user_id="u", session_id="s")
    asked = await run_turn(runner, "pay 5")

    assert [e.author for e in asked] == ["user", "boss", "boss", "boss"]
    (outer_call,) = asked[1].get_function_calls()
    (request,) = _waiting(asked).get_function_calls()
    assert request.name == CONFIRM
    assert request.args
    assert request.args["originalFunctionCall"]["name"] == "teller"
    assert "transfer()" in request.args["toolConfirmation"]["hint"]
    assert bank.transfers == []
    session = await services.sessions.get_session(app_name="app", user_id="u", session_id="s")
    assert session is not None
    (pending,) = pending_client_calls(session.events, asked[0].invocation_id)
    assert (pending.kind, pending.tool, pending.original_call_id) == (
        "confirmation",
        "teller",
        outer_call.id,
    )

    done = await _send(runner, _answer((request.id or "", True)), asked[0].invocation_id)

    assert bank.transfers == [5]
    assert len(teller_model.requests) == 2  # the wrapped agent went on, it did not start over
    assert done[1].get_function_responses()[0].response == {"result": "teller paid"}
    assert done[-1].content
    assert done[-1].content.parts
    assert done[-1].content.parts[0].text == "boss done"
    assert _responses_seen(boss_model, 1) == [("teller", {"result": "teller paid"})]


async def test_a_denied_confirmation_inside_an_agent_tool_never_runs_the_inner_tool() -> None:
    bank = Bank()
    boss, boss_model, teller_model = _agent_tool_setup(bank)
    runner = InMemoryRunner(boss, app_name="app")
    asked = await _start(runner, "pay 5")
    (request,) = _waiting(asked).get_function_calls()

    await _send(runner, _answer((request.id or "", False)))

    assert bank.transfers == []
    assert len(teller_model.requests) == 1
    assert _responses_seen(boss_model, 1) == [("teller", REJECTED)]


async def test_the_kept_inner_history_is_never_shown_to_a_model() -> None:
    """A new message instead of an answer: the model sees the waiting call's refusal-to-run
    answer, never the wrapped agent's history it keeps."""
    bank = Bank()
    boss, boss_model, _ = _agent_tool_setup(bank)
    runner = InMemoryRunner(boss, app_name="app")
    asked = await _start(runner, "pay 5")
    stored = asked[3].get_function_responses()[0].response  # after the request, as in ADK
    assert stored
    assert stored["agentToolEvents"]

    await run_turn(runner, "never mind")

    assert bank.transfers == []
    assert _responses_seen(boss_model, 1) == [("teller", REQUIRED)]


async def test_a_parallel_branch_that_asked_resumes_on_its_branch(services: Services) -> None:
    bank = Bank()
    payer_model = ScriptModel(
        replies=[calls_response(("transfer", {"amount": 6})), text_response("paid")]
    )
    payer = LlmAgent(
        name="payer",
        model=payer_model,
        tools=[FunctionTool(bank.transfer, require_confirmation=True)],
    )
    other = LlmAgent(name="other", model=ScriptModel(replies=[text_response("other branch")]))
    runner = services.runner(ParallelAgent(name="par", sub_agents=[payer, other]))
    await services.sessions.create_session(app_name="app", user_id="u", session_id="s")
    asked = await run_turn(runner, "pay 6")
    (request_event,) = [e for e in asked if _request_ids(e)]
    assert request_event.branch == "par.payer"

    done = await _send(runner, _answer((_request_ids(request_event)[0], True)))

    assert bank.transfers == [6]
    assert [(e.author, e.branch) for e in done[1:]] == [("payer", "par.payer")] * 2
    assert "other branch" not in str(payer_model.requests[1].contents)


async def test_a_loop_member_that_asked_is_resumed_and_the_loop_goes_on(
    services: Services,
) -> None:
    bank = Bank()
    model = ScriptModel(replies=[calls_response(("transfer", {"amount": 8})), text_response("ok")])
    payer = LlmAgent(
        name="payer", model=model, tools=[FunctionTool(bank.transfer, require_confirmation=True)]
    )
    runner = services.runner(LoopAgent(name="loop", sub_agents=[payer], max_iterations=3))
    await services.sessions.create_session(app_name="app", user_id="u", session_id="s")
    asked = await run_turn(runner, "pay 8")
    assert [e.author for e in asked] == ["user", "payer", "payer", "payer"]  # one ask, then stop

    node_info = _waiting(asked).node_info
    assert node_info is not None
    assert node_info.path == "payer@1"  # the iteration it asked in

    done = await _send(runner, _answer((_request_ids(_waiting(asked))[0], True)))

    assert bank.transfers == [8]
    # Iteration 1 finishes (the transfer, then "ok"), then iterations 2 and 3 run ("ok" each).
    assert [e.author for e in done] == ["user", "payer", "payer", "payer", "payer"]
    assert [e.node_info.path for e in done[1:] if e.node_info] == [
        "payer@1",
        "payer@1",
        "payer@2",
        "payer@3",
    ]


async def test_a_second_confirmation_later_in_the_invocation_is_asked_and_answered() -> None:
    bank = Bank()
    model = ScriptModel(
        replies=[
            calls_response(("transfer", {"amount": 1})),
            calls_response(("transfer", {"amount": 2})),
            text_response("both sent"),
        ]
    )
    runner = InMemoryRunner(_bank_agent(bank, model), app_name="app")
    asked = await _start(runner)
    invocation = asked[0].invocation_id

    again = await _send(runner, _answer((_request_ids(_waiting(asked))[0], True)), invocation)
    assert bank.transfers == [1]
    assert [e.author for e in again] == ["user"] + ["teller"] * 4  # result, call, request, ask
    second = _request_ids(_waiting(again))
    assert len(second) == 1
    session = await runner.session_service.get_session(app_name="app", user_id="u", session_id="s")
    assert session is not None
    assert [p.call_id for p in pending_client_calls(session.events, invocation)] == second

    done = await _send(runner, _answer((second[0], True)), invocation)
    assert bank.transfers == [1, 2]
    assert done[-1].content
    assert done[-1].content.parts
    assert done[-1].content.parts[0].text == "both sent"


async def test_a_confirmed_long_running_call_then_waits_for_its_result() -> None:
    started: list[str] = []

    def start_job(name: str) -> None:
        """Start a batch job; its result comes later."""
        started.append(name)

    model = ScriptModel(
        replies=[calls_response(("start_job", {"name": "nightly"})), text_response("job done")]
    )
    agent = LlmAgent(
        name="ops",
        model=model,
        tools=[LongRunningFunctionTool(start_job, require_confirmation=True)],
    )
    runner = InMemoryRunner(agent, app_name="app")
    asked = await _start(runner, "run the nightly job")
    (job_call,) = asked[1].get_function_calls()
    invocation = asked[0].invocation_id

    waiting = await _send(runner, _answer((_request_ids(_waiting(asked))[0], True)), invocation)

    assert started == ["nightly"]
    assert [e.author for e in waiting] == ["user", "ops"]
    assert waiting[-1].long_running_tool_ids == [job_call.id]
    assert len(model.requests) == 1
    session = await runner.session_service.get_session(app_name="app", user_id="u", session_id="s")
    assert session is not None
    (pending,) = pending_client_calls(session.events, invocation)
    assert (pending.kind, pending.call_id, pending.tool) == ("result", job_call.id, "start_job")

    result = types.Content(
        role="user",
        parts=[
            types.Part(
                function_response=types.FunctionResponse(
                    id=job_call.id, name="start_job", response={"status": "finished"}
                )
            )
        ],
    )
    done = await _send(runner, result, invocation)
    assert done[-1].content
    assert done[-1].content.parts
    assert done[-1].content.parts[0].text == "job done"
    assert _responses_seen(model, 1) == [("start_job", {"status": "finished"})]


async def test_a_parallel_branch_that_asks_pauses_alone_and_its_siblings_finish(
    services: Services,
) -> None:
    bank = Bank()
    payer_model = ScriptModel(
        replies=[calls_response(("transfer", {"amount": 4})), text_response("paid")]
    )
    payer = LlmAgent(
        name="payer",
        model=payer_model,
        tools=[FunctionTool(bank.transfer, require_confirmation=True)],
    )
    looked_up: list[str] = []

    def lookup(city: str) -> str:
        """Looks a city up."""
        looked_up.append(city)
        return f"{city}: sunny"

    # A sibling that needs two model steps (a tool call, then its answer).
    reporter = LlmAgent(
        name="reporter",
        model=ScriptModel(
            replies=[calls_response(("lookup", {"city": "Oslo"})), text_response("Oslo is sunny")]
        ),
        tools=[lookup],
    )
    runner = services.runner(ParallelAgent(name="par", sub_agents=[payer, reporter]))
    await services.sessions.create_session(app_name="app", user_id="u", session_id="s")

    asked = await run_turn(runner, "pay 4 and report")

    # The payer's branch stopped at its question; the reporter ran to its answer meanwhile.
    assert looked_up == ["Oslo"]
    assert any(e.author == "reporter" and e.is_final_response() for e in asked[1:])
    assert bank.transfers == []
    stored = await services.sessions.get_session(app_name="app", user_id="u", session_id="s")
    assert stored is not None
    (pending,) = pending_client_calls(stored.events, asked[0].invocation_id)
    assert (pending.kind, pending.tool) == ("confirmation", "transfer")

    done = await _send(runner, _answer((pending.call_id, True)), asked[0].invocation_id)

    assert bank.transfers == [4]
    assert [(e.author, e.branch) for e in done[1:]] == [("payer", "par.payer")] * 2
    assert looked_up == ["Oslo"]  # the finished sibling does not run again


async def test_a_loop_resumes_in_the_iteration_the_member_asked_in(services: Services) -> None:
    bank = Bank()
    payer_model = ScriptModel(
        replies=[
            text_response("nothing to pay yet"),
            calls_response(("transfer", {"amount": 2})),
            text_response("paid"),
            text_response("all paid"),
        ]
    )
    payer = LlmAgent(
        name="payer",
        model=payer_model,
        tools=[FunctionTool(bank.transfer, require_confirmation=True)],
    )
    counter = LlmAgent(name="counter", model=ScriptModel(replies=[text_response("tick")]))
    loop = LoopAgent(name="loop", sub_agents=[counter, payer], max_iterations=3)
    runner = services.runner(loop)
    await services.sessions.create_session(app_name="app", user_id="u", session_id="s")

    asked = await run_turn(runner, "go")
    assert [e.node_info.path for e in asked[1:] if e.node_info][-1] == "payer@2"

    done = await _send(runner, _answer((_request_ids(_waiting(asked))[0], True)))

    assert bank.transfers == [2]
    paths = [e.node_info.path for e in done[1:] if e.node_info]
    # The rest of iteration 2 (the transfer, "paid"), then iteration 3: counter, then payer.
    assert paths == ["payer@2", "payer@2", "counter@3", "payer@3"]


async def test_after_a_parallel_branch_resumes_what_follows_the_parallel_step_runs(
    services: Services,
) -> None:
    bank = Bank()
    payer = LlmAgent(
        name="payer",
        model=ScriptModel(
            replies=[calls_response(("transfer", {"amount": 5})), text_response("paid")]
        ),
        tools=[FunctionTool(bank.transfer, require_confirmation=True)],
    )
    reporter = LlmAgent(name="reporter", model=ScriptModel(replies=[text_response("reported")]))
    closer = LlmAgent(name="closer", model=ScriptModel(replies=[text_response("closed")]))
    both = ParallelAgent(name="both", sub_agents=[payer, reporter])
    runner = services.runner(SequentialAgent(name="flow", sub_agents=[both, closer]))
    await services.sessions.create_session(app_name="app", user_id="u", session_id="s")

    asked = await run_turn(runner, "pay 5")
    assert "closer" not in [e.author for e in asked]  # the sequence stopped at the parallel step
    (request_event,) = [e for e in asked if _request_ids(e)]

    done = await _send(
        runner, _answer((_request_ids(request_event)[0], True)), asked[0].invocation_id
    )

    assert bank.transfers == [5]
    assert [e.author for e in done[1:]] == ["payer", "payer", "closer"]
