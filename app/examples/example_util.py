"""Examples as system-instruction text, in the layout ADK uses (so prompts port unchanged)."""

from google.genai import types

from app.examples.base_example_provider import BaseExampleProvider
from app.examples.example import Example

_INTRO = (
    "<EXAMPLES>\nBegin few-shot\nThe following are examples of user queries and"
    " model responses using the available tools.\n\n"
)
_END = "End few-shot\n<EXAMPLES>"
_USER = "[user]\n"
_MODEL = "[model]\n"


def convert_examples_to_text(examples: list[Example], model: str | None) -> str:
    """The examples, numbered, each user text then the model's turns (calls as Python calls)."""
    gemini2 = model is None or "gemini-2" in model
    call_prefix = "```\n" if gemini2 else "```tool_code\n"
    response_prefix = "```\n" if gemini2 else "```tool_outputs\n"
    text = ""
    for number, example in enumerate(examples, start=1):
        out = f"EXAMPLE {number}:\nBegin example\n{_USER}"
        user_text = [p.text for p in example.input.parts or [] if p.text]
        if user_text:
            out += "\n".join(user_text) + "\n"
        previous: str | None = None
        for content in example.output:
            role = _MODEL if content.role == "model" else _USER
            if role != previous:
                out += role
            previous = role
            for part in content.parts or []:
                out += _part_text(part, call_prefix, response_prefix)
        text += out + "End example\n\n"
    return f"{_INTRO}{text}{_END}"


def _part_text(part: types.Part, call_prefix: str, response_prefix: str) -> str:
    if part.function_call is not None:
        call = part.function_call
        args = ", ".join(
            f"{k}='{v}'" if isinstance(v, str) else f"{k}={v}" for k, v in (call.args or {}).items()
        )
        return f"{call_prefix}{call.name}({args})\n```\n"
    if part.function_response is not None:
        response = part.function_response
        shown = {"id": response.id, "name": response.name, "response": response.response}
        return f"{response_prefix}{shown}\n```\n"
    if part.text:
        return f"{part.text}\n"
    return ""


def build_example_si(
    examples: list[Example] | BaseExampleProvider, query: str, model: str | None
) -> str:
    """The examples (a fixed list, or the provider's for `query`) as instruction text."""
    if isinstance(examples, BaseExampleProvider):
        return convert_examples_to_text(examples.get_examples(query), model)
    return convert_examples_to_text(list(examples), model)
