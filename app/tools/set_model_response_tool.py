"""set_model_response: how an agent with both tools and an `output_schema` gives its answer.

Gemini's API does not honour a response schema while tools are declared, so (as ADK does) such
an agent gets this tool, whose parameters are the schema: the model calls it with its answer,
the arguments are validated against the schema, and the engine turns the call into the agent's
final JSON answer (stored under `output_key`).
"""

import json
from typing import Any

from google.genai import types
from pydantic import BaseModel, TypeAdapter

from app.contexts.tool import ToolContext
from app.tools.base_tool import BaseTool

NAME = "set_model_response"


class SetModelResponseTool(BaseTool):
    """The final-answer tool for `output_schema` (a pydantic model, or any type)."""

    def __init__(self, output_schema: Any) -> None:
        super().__init__(
            name=NAME,
            description=(
                "Set your final response using the required output schema. Use this tool to "
                "provide your final structured answer instead of outputting text directly."
            ),
        )
        self.output_schema = output_schema
        self._adapter: TypeAdapter[Any] = TypeAdapter(output_schema)
        self._is_model = isinstance(output_schema, type) and issubclass(output_schema, BaseModel)

    def get_declaration(self) -> types.FunctionDeclaration:
        """The schema's fields as parameters (a non-object schema as one `response` field)."""
        schema = self._adapter.json_schema()
        if not self._is_model:
            schema = {
                "type": "object",
                "properties": {"response": schema},
                "required": ["response"],
            }
        return types.FunctionDeclaration(
            name=self.name, description=self.description, parameters_json_schema=schema
        )

    async def run_async(self, *, args: dict[str, Any], tool_context: ToolContext) -> Any:
        """The validated answer (a ValidationError reaches the model as the tool's error)."""
        del tool_context
        value = self._adapter.validate_python(args if self._is_model else args.get("response"))
        dumped = self._adapter.dump_python(value, mode="json", exclude_none=True)
        return dumped if isinstance(dumped, dict) else {"result": dumped}


def structured_answer(event_parts: list[types.Part]) -> str | None:
    """The JSON answer if these function responses include set_model_response's, else None."""
    for part in event_parts:
        response = part.function_response
        if response is None or response.name != NAME:
            continue
        value = response.response
        if isinstance(value, dict) and set(value) == {"result"}:
            value = value["result"]
        return json.dumps(value, ensure_ascii=False)
    return None
