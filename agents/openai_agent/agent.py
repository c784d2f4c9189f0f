"""openai_agent: the capital-city agent on an OpenAI model or an OpenAI-compatible server.

It works when `OPENAI_API_KEY` (OpenAI) or `OPENAI_BASE_URL` (a local server such as Ollama,
vLLM or LM Studio) is set; the model is `OPENAI_AGENT_MODEL` (default `openai/gpt-4o-mini`).
Without either, a before-model callback answers with what to set instead of failing.
"""

import os

from google.genai import types

from app.agents import LlmAgent
from app.agents.callback_context import CallbackContext
from app.models import LlmRequest, LlmResponse, OpenAILlm

CAPITALS = {"france": "Paris", "germany": "Berlin", "japan": "Tokyo", "canada": "Ottawa"}

SETUP = (
    "openai_agent is not configured: set OPENAI_API_KEY for OpenAI, or OPENAI_BASE_URL for an "
    "OpenAI-compatible server (Ollama http://localhost:11434/v1, vLLM http://localhost:8000/v1, "
    "LM Studio http://localhost:1234/v1) and OPENAI_AGENT_MODEL=openai/<model>, then restart "
    "agentd."
)


def get_capital_city(country: str) -> str:
    """Retrieves the capital city of a given country.

    Args:
        country: the country's name in English.
    """
    return CAPITALS.get(country.strip().lower(), f"Sorry, I don't know the capital of {country}.")


def explain_setup(callback_context: CallbackContext, llm_request: LlmRequest) -> LlmResponse | None:
    """Answers with the setup instructions while no provider is configured."""
    del callback_context, llm_request
    if os.environ.get("OPENAI_API_KEY") or os.environ.get("OPENAI_BASE_URL"):
        return None
    return LlmResponse(content=types.Content(role="model", parts=[types.Part(text=SETUP)]))


root_agent = LlmAgent(
    name="openai_agent",
    model=OpenAILlm(model=os.environ.get("OPENAI_AGENT_MODEL", "openai/gpt-4o-mini")),
    description="Answers capital-city questions with an OpenAI-compatible model.",
    instruction="You answer questions about capital cities. Use get_capital_city.",
    tools=[get_capital_city],
    before_model_callback=explain_setup,
)
