"""Tools shape the model request (BaseTool.process_llm_request), as ADK's tools do.

Covers the hook itself and the built-ins that only work through it: google_search (Gemini's
built-in grounding), preload_memory, ExampleTool.
"""

from typing import Any

import pytest
from google.genai import types

from app.agents import LlmAgent
from app.errors import InvocationFailed
from app.examples import BaseExampleProvider, Example
from app.invocations.runner import InMemoryRunner
from app.models.llm import LlmRequest
from app.tools import BaseTool, ExampleTool, FunctionTool, google_search, preload_memory
from app.tools.tool_context import ToolContext
from tests.engine.helpers import ScriptModel, calls_response, run_turn, text_response, texts


async def _runner(agent: LlmAgent) -> InMemoryRunner:
    runner = InMemoryRunner(agent, app_name="app")
    await runner.session_service.create_session(app_name="app", user_id="u", session_id="s")
    return runner


class Redactor(BaseTool):
    """A tool that declares itself and also edits every request it is part of."""

    def __init__(self) -> None:
        super().__init__(name="redact", description="Redacts.")

    def get_declaration(self) -> types.FunctionDeclaration:
        return types.FunctionDeclaration(name=self.name, description=self.description)

    async def process_llm_request(
        self, *, tool_context: ToolContext, llm_request: LlmRequest
    ) -> None:
        await super().process_llm_request(tool_context=tool_context, llm_request=llm_request)
        llm_request.append_instructions([f"Session {tool_context.session.id}: never say secrets."])
        for content in llm_request.contents:
            for part in content.parts or []:
                if part.text:
                    part.text = part.text.replace("hunter2", "*****")

    async def run_async(self, *, args: dict[str, Any], tool_context: ToolContext) -> Any:
        del args, tool_context
        return {"ok": True}


def lookup(city: str) -> str:
    """Looks a city up.

    Args:
        city: the city.
    """
    return f"{city}: sunny"


async def test_a_tool_may_edit_the_request_and_every_tool_joins_one_declaration_list() -> None:
    model = ScriptModel(replies=[text_response("fine")])
    runner = await _runner(LlmAgent(name="agent", model=model, tools=[Redactor(), lookup]))

    await run_turn(runner, "my password is hunter2")
    await run_turn(runner, "again: hunter2")

    first, second = model.requests
    assert "Session s: never say secrets." in first.system_instruction_text()
    assert all("hunter2" not in (p.text or "") for c in second.contents for p in c.parts or [])
    # The stored history is untouched: the edit was the request's own copy.
    session = await runner.session_service.get_session(app_name="app", user_id="u", session_id="s")
    assert session is not None
    assert session.events[0].content is not None
    assert session.events[0].content.parts is not None
    assert session.events[0].content.parts[0].text == "my password is hunter2"
    # Both declarations arrive in one Tool, as ADK sends them.
    assert first.config.tools is not None
    assert len(first.config.tools) == 1
    declared = first.config.tools[0]
    assert isinstance(declared, types.Tool)
    assert declared.function_declarations is not None
    assert [d.name for d in declared.function_declarations] == ["redact", "lookup"]
    assert set(first.tools_dict) == {"redact", "lookup"}


async def test_tools_declared_by_the_agent_config_keep_their_tool_entry() -> None:
    model = ScriptModel(replies=[text_response("fine")])
    config = types.GenerateContentConfig(
        tools=[types.Tool(function_declarations=[types.FunctionDeclaration(name="external")])]
    )
    agent = LlmAgent(
        name="agent", model=model, tools=[FunctionTool(lookup)], generate_content_config=config
    )
    runner = await _runner(agent)

    await run_turn(runner, "hi")

    (tool,) = model.requests[0].config.tools or []
    assert isinstance(tool, types.Tool)
    assert tool.function_declarations is not None
    assert [d.name for d in tool.function_declarations] == ["external", "lookup"]
    # The agent's own config object is never changed by building requests.
    assert config.tools is not None
    tool0 = config.tools[0]
    assert isinstance(tool0, types.Tool)
    assert tool0.function_declarations is not None
    assert len(tool0.function_declarations) == 1


async def test_google_search_declares_geminis_built_in_search_and_nothing_callable() -> None:
    model = ScriptModel(model="gemini-2.5-flash", replies=[text_response("grounded")])
    runner = await _runner(LlmAgent(name="agent", model=model, tools=[google_search, lookup]))

    events = await run_turn(runner, "news?")

    tools = model.requests[0].config.tools or []
    assert any(isinstance(t, types.Tool) and t.google_search is not None for t in tools)
    assert "google_search" not in model.requests[0].tools_dict
    assert texts(events)[-1] == "grounded"


async def test_google_search_on_gemini_1_uses_retrieval_and_other_models_fail_clearly() -> None:
    old = ScriptModel(model="gemini-1.5-pro", replies=[text_response("ok")])
    await run_turn(await _runner(LlmAgent(name="agent", model=old, tools=[google_search])), "q")
    (tool,) = old.requests[0].config.tools or []
    assert isinstance(tool, types.Tool)
    assert tool.google_search_retrieval is not None

    other = ScriptModel(model="gpt-4o", replies=[text_response("never")])
    runner = await _runner(LlmAgent(name="agent", model=other, tools=[google_search]))
    with pytest.raises(InvocationFailed) as failure:
        await run_turn(runner, "q")
    assert "not supported for model gpt-4o" in str(failure.value.__cause__)
    assert other.requests == []


async def test_preload_memory_puts_matching_past_conversations_in_the_instruction() -> None:
    model = ScriptModel(
        replies=[text_response("Your dog is called Rex."), text_response("Rex, I recall.")]
    )
    runner = await _runner(LlmAgent(name="agent", model=model, tools=[preload_memory]))
    await run_turn(runner, "my dog is called Rex", session_id="s")
    earlier = await runner.session_service.get_session(app_name="app", user_id="u", session_id="s")
    assert earlier is not None
    assert runner.memory_service is not None
    await runner.memory_service.add_session_to_memory(earlier)
    await runner.session_service.create_session(app_name="app", user_id="u", session_id="t")

    await run_turn(runner, "what is my dog called?", session_id="t")

    instruction = model.requests[-1].system_instruction_text()
    assert "<PAST_CONVERSATIONS>" in instruction
    assert "user: my dog is called Rex" in instruction
    assert "agent: Your dog is called Rex." in instruction
    assert "preload_memory" not in model.requests[-1].tools_dict
    # Nothing matched in the first session: no block at all.
    assert "<PAST_CONVERSATIONS>" not in model.requests[0].system_instruction_text()


def _example(question: str, answer: str) -> Example:
    return Example(
        input=types.Content(role="user", parts=[types.Part(text=question)]),
        output=[
            types.Content(
                role="model",
                parts=[
                    types.Part(
                        function_call=types.FunctionCall(name="lookup", args={"city": "Oslo"})
                    )
                ],
            ),
            types.Content(
                role="user",
                parts=[
                    types.Part(
                        function_response=types.FunctionResponse(
                            name="lookup", response={"result": "Oslo: sunny"}
                        )
                    )
                ],
            ),
            types.Content(role="model", parts=[types.Part(text=answer)]),
        ],
    )


async def test_example_tool_adds_few_shot_examples_in_adks_layout() -> None:
    model = ScriptModel(replies=[text_response("ok")])
    examples = ExampleTool([_example("weather in Oslo?", "Sunny in Oslo.")])
    runner = await _runner(LlmAgent(name="agent", model=model, tools=[examples, lookup]))

    await run_turn(runner, "weather in Bergen?")

    instruction = model.requests[0].system_instruction_text()
    assert instruction.startswith("<EXAMPLES>\nBegin few-shot\n")
    assert "EXAMPLE 1:\nBegin example\n[user]\nweather in Oslo?\n[model]\n" in instruction
    # A model that is not Gemini 2 gets ADK's tagged code blocks.
    assert "```tool_code\nlookup(city='Oslo')\n```\n" in instruction
    assert "```tool_outputs\n{'id': None, 'name': 'lookup'" in instruction
    assert "[model]\nSunny in Oslo.\nEnd example" in instruction
    assert instruction.endswith("End few-shot\n<EXAMPLES>")
    assert "example_tool" not in model.requests[0].tools_dict


async def test_an_example_provider_chooses_examples_for_the_users_message() -> None:
    class ByCity(BaseExampleProvider):
        def __init__(self) -> None:
            self.queries: list[str] = []

        def get_examples(self, query: str) -> list[Example]:
            self.queries.append(query)
            return [_example(query, f"About {query.split()[-1]}")]

    provider = ByCity()
    model = ScriptModel(replies=[text_response("ok")])
    runner = await _runner(LlmAgent(name="agent", model=model, tools=[ExampleTool(provider)]))

    await run_turn(runner, "tell me about Paris")

    assert provider.queries == ["tell me about Paris"]
    assert "About Paris" in model.requests[0].system_instruction_text()


async def test_request_hooks_run_before_every_model_call_of_a_turn() -> None:
    model = ScriptModel(replies=[calls_response(("lookup", {"city": "Oslo"})), text_response("ok")])
    runner = await _runner(LlmAgent(name="agent", model=model, tools=[Redactor(), lookup]))

    await run_turn(runner, "Oslo?")

    assert len(model.requests) == 2
    assert all("never say secrets" in r.system_instruction_text() for r in model.requests)
