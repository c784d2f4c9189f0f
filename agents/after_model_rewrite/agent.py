"""The guide's after_model_callback example: "joke" in the model's answer becomes "funny story"."""

from google.genai import types

from app.agents import LlmAgent
from app.agents.callback_context import CallbackContext
from app.models import LlmResponse
from app.models.scripted import Rule, ScriptedLlm


def simple_after_model_modifier(
    callback_context: CallbackContext, llm_response: LlmResponse
) -> LlmResponse | None:
    """Rewrites "joke" to "funny story" in text answers."""
    del callback_context
    if not llm_response.content or not llm_response.content.parts:
        return None
    text = llm_response.content.parts[0].text or ""
    if "joke" not in text.lower():
        return None
    rewritten = text.replace("joke", "funny story").replace("Joke", "Funny story")
    return LlmResponse(content=types.Content(role="model", parts=[types.Part(text=rewritten)]))


root_agent = LlmAgent(
    name="AfterModelCallbackAgent",
    model=ScriptedLlm(rules=[Rule(when_user="joke", say="Here is a joke about a joke.")]),
    instruction="You are a helpful assistant.",
    description="An LLM agent demonstrating after_model_callback",
    after_model_callback=simple_after_model_modifier,
)
