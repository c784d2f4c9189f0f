"""long_plain: the offline app of bench/long_session.py, without compaction.

Each turn is what capital_agent does (a function call, its response, a text answer), with a model
that costs next to nothing, so what the benchmark measures is the server's own per-turn work.
The answer reports the request the model got: `contents=<n>` always, and on a probe turn (the
user's message contains PROBE) also `request_chars=<length of the JSON of the contents>`;
encoding the whole request is left out of the other turns, whose server CPU the benchmark reads.
"""

import json
import re
from collections.abc import AsyncGenerator

from google.genai import types

from app.agents import LlmAgent
from app.models import BaseLlm, LlmRequest, LlmResponse

PROBE = "[probe]"
CAPITALS = {
    "france": "Paris",
    "germany": "Berlin",
    "italy": "Rome",
    "spain": "Madrid",
    "japan": "Tokyo",
    "canada": "Ottawa",
}


def get_capital_city(country: str) -> str:
    """Retrieves the capital city of a given country."""
    return CAPITALS.get(country.lower(), "unknown")


def request_chars(llm_request: LlmRequest) -> int:
    """Characters of the request's contents as JSON (what a model API would be sent)."""
    return len(
        json.dumps([c.model_dump(mode="json", exclude_none=True) for c in llm_request.contents])
    )


def _user_text(llm_request: LlmRequest) -> str:
    for content in reversed(llm_request.contents):
        if content.role == "user":
            text = "".join(p.text or "" for p in content.parts or [])
            if text:
                return text
    return ""


class SizeReportingModel(BaseLlm):
    """Calls the tool for a question; after its result, answers with the request's size."""

    model: str = "long-session-model"

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        """A function call, or the sized answer after the tool's response."""
        del stream  # one whole answer either way
        last = llm_request.contents[-1]
        for part in last.parts or []:
            if part.function_response is not None:
                city = (part.function_response.response or {}).get("result")
                report = f"The capital is {city}. contents={len(llm_request.contents)}"
                if PROBE in _user_text(llm_request):
                    report += f" request_chars={request_chars(llm_request)}"
                yield LlmResponse(
                    content=types.Content(role="model", parts=[types.Part(text=report)])
                )
                return
        question = "".join(p.text or "" for p in last.parts or [])
        match = re.search(r"capital of ([^?]+)", question)
        call = types.FunctionCall(
            name="get_capital_city", args={"country": match.group(1) if match else question}
        )
        yield LlmResponse(
            content=types.Content(role="model", parts=[types.Part(function_call=call)])
        )


root_agent = LlmAgent(
    name="long_plain",
    model=SizeReportingModel(),
    instruction="You answer questions about capital cities. Use the get_capital_city tool.",
    tools=[get_capital_city],
)
