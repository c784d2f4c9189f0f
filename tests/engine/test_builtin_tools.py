"""ADK's built-in tools run through an LlmAgent: long-running calls, artifacts, memory."""

from google.genai import types

from app.agents import LlmAgent
from app.invocations.runner import InMemoryRunner
from app.tools import LongRunningFunctionTool, get_user_choice, load_artifacts, load_memory
from app.tools.tool_context import ToolContext
from tests.engine.conftest import Services
from tests.engine.helpers import ScriptModel, calls_response, run_turn, text_response, texts


async def _in_memory_runner(agent: LlmAgent) -> InMemoryRunner:
    runner = InMemoryRunner(agent, app_name="app")
    await runner.session_service.create_session(app_name="app", user_id="u", session_id="s")
    return runner


def _answer(call_id: str, name: str, response: dict[str, object]) -> types.Content:
    """The client's late answer to a long-running call."""
    part = types.Part(
        function_response=types.FunctionResponse(id=call_id, name=name, response=response)
    )
    return types.Content(role="user", parts=[part])


def ask_for_approval(amount: int, tool_context: ToolContext) -> None:
    """Asks a manager to approve a reimbursement.

    Args:
        amount: the amount to reimburse.
    """
    tool_context.state["asked"] = amount


async def test_a_long_running_call_pauses_the_invocation_until_the_client_answers_it() -> None:
    model = ScriptModel(
        replies=[calls_response(("ask_for_approval", {"amount": 50})), text_response("approved")]
    )
    agent = LlmAgent(name="agent", model=model, tools=[LongRunningFunctionTool(ask_for_approval)])
    runner = await _in_memory_runner(agent)

    events = await run_turn(runner, "reimburse 50")

    (call,) = events[-1].get_function_calls()
    assert call.id is not None
    assert events[-1].long_running_tool_ids == [call.id]
    assert not any(e.get_function_responses() for e in events)  # no answer yet: paused
    assert len(model.requests) == 1

    later = [
        e
        async for e in runner.run_async(
            user_id="u",
            session_id="s",
            new_message=_answer(call.id, "ask_for_approval", {"status": "approved"}),
        )
    ]

    assert later[-1].content is not None
    assert later[-1].content.parts is not None
    assert later[-1].content.parts[0].text == "approved"
    response = model.requests[-1].contents[-1].parts[0].function_response  # type: ignore[index]
    assert response is not None
    assert (response.id, response.response) == (call.id, {"status": "approved"})


def test_a_long_running_tool_tells_the_model_not_to_call_it_again() -> None:
    tool = LongRunningFunctionTool(ask_for_approval)

    declaration = tool.get_declaration()

    assert tool.is_long_running
    assert declaration.description is not None
    assert declaration.description.startswith("Asks a manager to approve a reimbursement.")
    assert "Do not call this tool again" in declaration.description
    assert declaration.parameters is not None
    assert list(declaration.parameters.properties or {}) == ["amount"]


async def test_get_user_choice_pauses_until_the_client_sends_the_choice() -> None:
    model = ScriptModel(
        replies=[
            calls_response(("get_user_choice", {"options": ["tea", "coffee"]})),
            text_response("coffee it is"),
        ]
    )
    agent = LlmAgent(name="agent", model=model, tools=[get_user_choice])
    runner = await _in_memory_runner(agent)

    events = await run_turn(runner, "tea or coffee?")

    (call,) = events[-1].get_function_calls()
    assert call.id is not None
    assert call.args == {"options": ["tea", "coffee"]}
    assert events[-1].long_running_tool_ids == [call.id]
    assert not any(e.get_function_responses() for e in events)

    later = [
        e
        async for e in runner.run_async(
            user_id="u",
            session_id="s",
            new_message=_answer(call.id, "get_user_choice", {"result": "coffee"}),
        )
    ]

    assert texts(later) == ["coffee it is"]


async def test_load_artifacts_lists_names_then_attaches_the_named_ones_to_the_next_request() -> (
    None
):
    model = ScriptModel(
        replies=[
            calls_response(("load_artifacts", {"artifact_names": ["notes.txt", "logo.png"]})),
            calls_response(("load_artifacts", {"artifact_names": ["profile.json", "nope"]})),
            text_response("read them"),
        ]
    )
    agent = LlmAgent(name="agent", model=model, tools=[load_artifacts])
    runner = await _in_memory_runner(agent)
    service = runner.artifact_service
    assert service is not None
    logo = types.Part.from_bytes(data=b"\x89PNG" * 256, mime_type="image/png")
    for filename, part in [
        ("notes.txt", types.Part(text="buy milk")),
        ("logo.png", logo),
        (
            "user:profile.json",
            types.Part.from_bytes(data=b'{"a": 1}', mime_type="application/json"),
        ),
        (
            "data.bin",
            types.Part.from_bytes(data=b"\x00" * 2048, mime_type="application/octet-stream"),
        ),
    ]:
        await service.save_artifact(
            app_name="app", user_id="u", session_id="s", filename=filename, artifact=part
        )

    events = await run_turn(runner, "what do my files say?")

    # Every request lists the names in the system instruction (ADK's wording).
    available = '["data.bin", "logo.png", "notes.txt", "user:profile.json"]'
    for request in model.requests:
        assert f"You have a list of artifacts:\n  {available}" in request.system_instruction_text()
        assert "load_artifacts" in request.tools_dict
    # The tool's reply only confirms the names, and the session never stores the content ...
    first = events[2].get_function_responses()[0].response
    assert first is not None
    assert first["artifact_names"] == ["notes.txt", "logo.png"]
    assert "temporarily inserted" in first["status"]
    stored = "".join(str(e.content) for e in events)
    assert "buy milk" not in stored
    # ... which the next request gets as user turns after the function response.
    attached = model.requests[1].contents[-2:]
    assert [c.role for c in attached] == ["user", "user"]
    assert attached[0].parts is not None
    assert attached[0].parts[0].text == "Artifact notes.txt is:"
    assert attached[0].parts[1].text == "buy milk"
    assert attached[1].parts is not None
    assert attached[1].parts[1].inline_data is not None
    assert attached[1].parts[1].inline_data.mime_type == "image/png"  # images go inline
    # A name not in the session is read from the user's artifacts; JSON arrives as text, and a
    # name found nowhere is skipped.
    user_turns = model.requests[2].contents[-1:]
    assert user_turns[0].parts is not None
    assert [p.text for p in user_turns[0].parts] == ["Artifact profile.json is:", '{"a": 1}']
    assert texts(events)[-1] == "read them"


async def test_load_artifacts_describes_binary_content_a_model_cannot_take_inline() -> None:
    model = ScriptModel(
        replies=[
            calls_response(("load_artifacts", {"artifact_names": ["data.bin"]})),
            text_response("done"),
        ]
    )
    agent = LlmAgent(name="agent", model=model, tools=[load_artifacts])
    runner = await _in_memory_runner(agent)
    assert runner.artifact_service is not None
    await runner.artifact_service.save_artifact(
        app_name="app",
        user_id="u",
        session_id="s",
        filename="data.bin",
        artifact=types.Part.from_bytes(data=b"\x00" * 2048, mime_type="application/octet-stream"),
    )

    await run_turn(runner, "read data.bin")

    described = model.requests[1].contents[-1].parts
    assert described is not None
    assert described[1].text == (
        "[Binary artifact: data.bin, type: application/octet-stream, size: 2.0 KB. "
        "Content cannot be displayed inline.]"
    )


async def test_load_artifacts_adds_nothing_when_the_session_has_no_artifacts() -> None:
    model = ScriptModel(replies=[text_response("none")])
    agent = LlmAgent(name="agent", model=model, tools=[load_artifacts])
    runner = await _in_memory_runner(agent)

    await run_turn(runner, "anything?")

    assert "You have a list of artifacts" not in model.requests[0].system_instruction_text()
    assert "load_artifacts" in model.requests[0].tools_dict


async def test_load_memory_finds_what_an_earlier_session_said(services: Services) -> None:
    model = ScriptModel(
        replies=[
            text_response("Your favourite colour is teal."),
            calls_response(("load_memory", {"query": "favourite colour"})),
            text_response("teal"),
        ]
    )
    agent = LlmAgent(name="agent", model=model, tools=[load_memory])
    runner = services.runner(agent)
    for session_id in ("earlier", "now"):
        await services.sessions.create_session(app_name="app", user_id="u", session_id=session_id)
    await run_turn(runner, "remember my favourite colour", session_id="earlier")
    earlier = await services.sessions.get_session(app_name="app", user_id="u", session_id="earlier")
    assert earlier is not None
    await services.memory.add_session_to_memory(earlier)

    events = await run_turn(runner, "what is my favourite colour?", session_id="now")

    (response,) = events[2].get_function_responses()
    assert response.response is not None
    remembered = [
        part["text"]
        for memory in response.response["memories"]
        for part in memory["content"]["parts"]
    ]
    assert "Your favourite colour is teal." in remembered
    assert texts(events)[-1] == "teal"


async def test_load_memory_is_declared_with_its_query_and_advises_in_the_instruction() -> None:
    declaration = load_memory.get_declaration()
    assert declaration.parameters is not None
    assert declaration.parameters.required == ["query"]
    model = ScriptModel(replies=[text_response("ok")])
    runner = await _in_memory_runner(LlmAgent(name="agent", model=model, tools=[load_memory]))

    await run_turn(runner, "hi")

    instruction = model.requests[0].system_instruction_text()
    assert "call load_memory function with a query" in instruction
