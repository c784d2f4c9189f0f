# Source: ADK docs, "State: The Session's Scratchpad" > "Bypassing State Injection with
#   InstructionProvider" (second snippet: inject_session_state), https://google.github.io/adk-docs/sessions/state/
# Changed: only the imports (`google.adk` -> `app`). The test runs the agent against the local
# Gemini API stub with session.state['adjective'] set and reads the instruction it sent.
from app.agents import LlmAgent
from app.agents.readonly_context import ReadonlyContext
from app.utils import instructions_utils

async def my_dynamic_instruction_provider(context: ReadonlyContext) -> str:
    template = "This is a {adjective} instruction with {{literal_braces}}."
    # This will inject the 'adjective' state variable but leave the literal braces.
    return await instructions_utils.inject_session_state(template, context)

agent = LlmAgent(
    model="gemini-2.0-flash",
    name="dynamic_template_helper_agent",
    instruction=my_dynamic_instruction_provider
)
