"""The guide's after_agent_callback example: `add_concluding_note: true` replaces the output."""

from google.genai import types

from app.agents import LlmAgent
from app.agents.callback_context import CallbackContext


def modify_output_after_agent(callback_context: CallbackContext) -> types.Content | None:
    """Replaces the agent's output when the session state asks for it."""
    if callback_context.state.get("add_concluding_note", False):
        return types.Content(
            parts=[
                types.Part(
                    text="Concluding note added by after_agent_callback, replacing original output."
                )
            ],
            role="model",
        )
    return None


root_agent = LlmAgent(
    name="MySimpleAgentWithAfter",
    model="scripted",
    instruction="You are a simple agent. Just say 'Processing complete!'",
    description="An LLM agent demonstrating after_agent_callback for output modification",
    after_agent_callback=modify_output_after_agent,
)
