"""A model's tool call with arguments of the wrong type is answered with a readable error the
model sees in its next request; the function does not run and the invocation goes on."""

from typing import Any

from pydantic import BaseModel

from app.agents import LlmAgent
from app.models.llm import LlmRequest
from tests.engine.conftest import Services
from tests.engine.helpers import ScriptModel, calls_response, run_turn, text_response, texts


class Order(BaseModel):
    """A line of an order."""

    sku: str
    quantity: int


def _tool_errors(request: LlmRequest) -> list[str]:
    """The `error` of every function response in the request's last content."""
    last = request.contents[-1]
    return [
        str((p.function_response.response or {}).get("error"))
        for p in last.parts or []
        if p.function_response is not None
    ]


async def _run(services: Services, tools: list[Any], model: ScriptModel) -> list[str]:
    await services.sessions.create_session(app_name="app", user_id="u", session_id="s")
    runner = services.runner(LlmAgent(name="clerk", model=model, tools=tools))
    return texts(await run_turn(runner, "go"))


async def test_a_wrong_type_reaches_the_model_as_a_readable_error_and_it_can_retry(
    services: Services,
) -> None:
    ran: list[tuple[Any, Any]] = []

    def transfer(amount: int, to: str) -> str:
        """Moves money."""
        ran.append((amount, to))
        return "sent"

    model = ScriptModel(
        replies=[
            calls_response(("transfer", {"amount": "lots", "to": "bob"})),
            calls_response(("transfer", {"amount": "5", "to": "bob"})),
            text_response("done"),
        ]
    )

    answer = await _run(services, [transfer], model)

    (error,) = _tool_errors(model.requests[1])
    assert error.startswith("Invalid arguments for tool `transfer()`: 'amount' should be a valid")
    assert "integer" in error
    assert "(got 'lots')" in error
    assert "Retry the call" in error
    # The corrected call runs, with the value as its type says.
    assert ran == [(5, "bob")]
    assert _tool_errors(model.requests[2]) == ["None"]
    assert answer[-1] == "done"


async def test_nested_model_fields_and_missing_arguments_are_named_together(
    services: Services,
) -> None:
    received: list[tuple[Order, str]] = []

    def place(order: Order, note: str) -> str:
        """Places an order."""
        received.append((order, note))
        return "placed"

    model = ScriptModel(
        replies=[
            calls_response(("place", {"order": {"sku": "A1", "quantity": "many"}})),
            calls_response(("place", {"order": {"sku": "A1", "quantity": 2}, "note": "asap"})),
            text_response("done"),
        ]
    )

    answer = await _run(services, [place], model)

    (error,) = _tool_errors(model.requests[1])
    assert "'order.quantity' should be a valid integer" in error
    assert "'note' is required" in error
    # A dict for a pydantic model parameter arrives as the model, as ADK converts it.
    assert received == [(Order(sku="A1", quantity=2), "asap")]
    assert answer[-1] == "done"


async def test_null_for_a_parameter_with_a_default_is_passed_as_given(
    services: Services,
) -> None:
    seen: list[Any] = []

    def search(query: str, limit: int = 10) -> str:
        """Searches."""
        seen.append((query, limit))
        return "found"

    model = ScriptModel(
        replies=[calls_response(("search", {"query": "x", "limit": None})), text_response("ok")]
    )

    await _run(services, [search], model)

    assert seen == [("x", None)]
    assert _tool_errors(model.requests[1]) == ["None"]
