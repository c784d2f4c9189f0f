"""BaseToolset (issue 20): an LlmAgent resolves its toolsets' tools once per invocation, in
`tools` order, filtered and prefixed, and they run as any other tool."""

from typing import Any

from app.agents import LlmAgent
from app.contexts.readonly import ReadonlyContext
from app.runners import InMemoryRunner
from app.tools import BaseTool, BaseToolset, FunctionTool
from app.tools.tool_context import ToolContext
from tests.engine.helpers import ScriptModel, calls_response, run_turn, text_response


class Counter:
    def __init__(self) -> None:
        self.calls: list[str] = []


class NumbersToolset(BaseToolset):
    """Two tools, listed anew each time it is asked (as a remote server would)."""

    def __init__(self, counter: Counter, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.counter = counter
        self.asked = 0
        self.closed = False

    async def get_tools(self, readonly_context: ReadonlyContext | None = None) -> list[BaseTool]:
        self.asked += 1
        assert readonly_context is not None
        assert readonly_context.user_id == "u"

        def double(n: int) -> int:
            """Doubles n."""
            self.counter.calls.append("double")
            return 2 * n

        def negate(n: int) -> int:
            """Negates n."""
            self.counter.calls.append("negate")
            return -n

        tools: list[BaseTool] = [FunctionTool(double), FunctionTool(negate)]
        return [t for t in tools if self._is_tool_selected(t, readonly_context)]

    async def close(self) -> None:
        self.closed = True


def _declared(model: ScriptModel, request: int = 0) -> list[str]:
    return list(model.requests[request].tools_dict)


async def _run(agent: LlmAgent) -> None:
    runner = InMemoryRunner(agent, app_name="app")
    await runner.session_service.create_session(app_name="app", user_id="u", session_id="s")
    await run_turn(runner, "go")


async def test_a_toolsets_tools_are_declared_in_order_and_run() -> None:
    counter = Counter()
    toolset = NumbersToolset(counter)

    def hello(tool_context: ToolContext) -> str:
        """Says hello."""
        del tool_context
        counter.calls.append("hello")
        return "hi"

    model = ScriptModel(
        replies=[calls_response(("negate", {"n": 3}), ("hello", {})), text_response("done")]
    )
    await _run(LlmAgent(name="a", model=model, tools=[toolset, hello]))

    assert _declared(model) == ["double", "negate", "hello"]
    assert counter.calls == ["negate", "hello"]
    assert toolset.asked == 1  # once per invocation, not per model call
    assert len(model.requests) == 2
    assert _declared(model, 1) == ["double", "negate", "hello"]


async def test_a_filter_and_a_prefix_shape_what_the_model_sees() -> None:
    counter = Counter()
    by_name = NumbersToolset(counter, tool_filter=["double"], tool_name_prefix="math")

    def only_negate(tool: BaseTool, readonly_context: ReadonlyContext | None = None) -> bool:
        del readonly_context
        return tool.name == "negate"

    by_predicate = NumbersToolset(counter, tool_filter=only_negate)
    model = ScriptModel(replies=[calls_response(("math_double", {"n": 2})), text_response("4")])

    await _run(LlmAgent(name="a", model=model, tools=[by_name, by_predicate]))

    assert _declared(model) == ["math_double", "negate"]
    assert counter.calls == ["double"]
