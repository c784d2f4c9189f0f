"""claude_agent: the capital-city agent on Claude, through the official `anthropic` SDK.

It works when `ANTHROPIC_API_KEY` is set (`ANTHROPIC_BASE_URL` for a gateway); the model is
`CLAUDE_AGENT_MODEL` (default `anthropic/claude-sonnet-5-5`). Without a key, a before-model
callback answers with what to set instead of failing.
"""

import os

from google.genai import types

from app.agents import LlmAgent
from app.agents.callback_context import CallbackContext
from app.models import Claude, LlmRequest, LlmResponse

CAPITALS = {"france": "Paris", "germany": "Berlin", "japan": "Tokyo", "canada": "Ottawa"}

SETUP = (
    "claude_agent is not configured: set ANTHROPIC_API_KEY (and ANTHROPIC_BASE_URL for a "
    "gateway), optionally CLAUDE_AGENT_MODEL=anthropic/<model>, then restart agentd."
)


def get_capital_city(country: str) -> str:
    """Retrieves the capital city of a given country.

    Args:
        country: the country's name in English.
    """
    return CAPITALS.get(country.strip().lower(), f"Sorry, I don't know the capital of {country}.")


def explain_setup(callback_context: CallbackContext, llm_request: LlmRequest) -> LlmResponse | None:
    """Answers with the setup instructions while no key is configured."""
    del callback_context, llm_request
    if os.environ.get("ANTHROPIC_API_KEY"):
        return None
    return LlmResponse(content=types.Content(role="model", parts=[types.Part(text=SETUP)]))


root_agent = LlmAgent(
    name="claude_agent",
    model=Claude(model=os.environ.get("CLAUDE_AGENT_MODEL", "anthropic/claude-sonnet-5-5")),
    description="Answers capital-city questions with Claude.",
    instruction="You answer questions about capital cities. Use get_capital_city.",
    tools=[get_capital_city],
    before_model_callback=explain_setup,
)
