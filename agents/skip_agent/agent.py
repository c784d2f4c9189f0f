"""The guide's before_agent_callback example: state `skip_llm_agent: true` skips the agent."""

from google.genai import types

from app.agents import LlmAgent
from app.agents.callback_context import CallbackContext


def check_if_agent_should_run(callback_context: CallbackContext) -> types.Content | None:
    """Skips the agent when the session state asks for it."""
    if callback_context.state.get("skip_llm_agent", False):
        name = callback_context.agent_name
        return types.Content(
            parts=[types.Part(text=f"Agent {name} skipped by before_agent_callback due to state.")],
            role="model",
        )
    return None


root_agent = LlmAgent(
    name="MyControlledAgent",
    model="scripted",
    instruction="You are a concise assistant.",
    description="An LLM agent demonstrating stateful before_agent_callback",
    before_agent_callback=check_if_agent_should_run,
)
