"""Benchmark app for google-adk (kept logic-identical to ../../agentd/capital_bench/agent.py).

A deterministic model answers "capital of X" with a function call, the tool saves a 1 KB text
artifact and writes two state keys (one `user:`), then the model answers with text.
"""

import re
from collections.abc import AsyncGenerator

from google.adk.agents import LlmAgent
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.tools.tool_context import ToolContext
from google.genai import types

CAPITALS = {"france": "Paris", "germany": "Berlin", "italy": "Rome", "spain": "Madrid",
            "japan": "Tokyo", "canada": "Ottawa"}
NOTE = "x" * 1024


async def get_capital_city(country: str, tool_context: ToolContext) -> str:
    """Retrieves the capital city of a given country."""
    await tool_context.save_artifact("notes.txt", types.Part(text=NOTE))
    tool_context.state["last_country"] = country
    tool_context.state["user:visits"] = int(tool_context.state.get("user:visits", 0)) + 1
    return CAPITALS.get(country.lower(), "unknown")


class BenchModel(BaseLlm):
    """Function call for a question, then the answer from the tool's result."""

    model: str = "bench-model"

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        last = llm_request.contents[-1]
        for part in last.parts or []:
            if part.function_response is not None:
                city = (part.function_response.response or {}).get("result")
                text = f"The capital is {city}."
                yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text=text)]))
                return
        question = "".join(p.text or "" for p in last.parts or [])
        match = re.search(r"capital of ([^?]+)", question)
        country = match.group(1) if match else question
        call = types.FunctionCall(name="get_capital_city", args={"country": country})
        yield LlmResponse(content=types.Content(role="model", parts=[types.Part(function_call=call)]))


root_agent = LlmAgent(name="capital_bench", model=BenchModel(), tools=[get_capital_city])
