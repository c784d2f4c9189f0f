"""The guide's before_model_callback example: prefixes the system instruction; "BLOCK" skips the
model and answers from the callback instead."""

from google.genai import types

from app.agents import LlmAgent
from app.agents.callback_context import CallbackContext
from app.models import LlmRequest, LlmResponse


def simple_before_model_modifier(
    callback_context: CallbackContext, llm_request: LlmRequest
) -> LlmResponse | None:
    """Inspects/modifies the LLM request or skips the call."""
    del callback_context
    last_user_message = ""
    if llm_request.contents and llm_request.contents[-1].role == "user":
        if llm_request.contents[-1].parts:
            last_user_message = llm_request.contents[-1].parts[0].text or ""
    llm_request.config.system_instruction = (
        "[Modified by Callback] " + llm_request.system_instruction_text()
    )
    if "BLOCK" in last_user_message.upper():
        return LlmResponse(
            content=types.Content(
                role="model",
                parts=[types.Part(text="LLM call was blocked by before_model_callback.")],
            )
        )
    return None


root_agent = LlmAgent(
    name="ModelCallbackAgent",
    model="scripted",
    instruction="You are a helpful assistant.",
    description="An LLM agent demonstrating before_model_callback",
    before_model_callback=simple_before_model_modifier,
)
