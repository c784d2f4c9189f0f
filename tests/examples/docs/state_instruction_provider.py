# Source: ADK docs, "State: The Session's Scratchpad" > "Bypassing State Injection with
#   InstructionProvider" (first snippet), https://google.github.io/adk-docs/sessions/state/
# Changed: only the imports (`google.adk` -> `app`). The test runs the agent against the local
# Gemini API stub and reads the instruction it sent.
from app.agents import LlmAgent
from app.agents.readonly_context import ReadonlyContext

# This is an InstructionProvider
def my_instruction_provider(context: ReadonlyContext) -> str:
    # You can optionally use the context to build the instruction
    # For this example, we'll return a static string with literal braces.
    return "This is an instruction with {{literal_braces}} that will not be replaced."

agent = LlmAgent(
    model="gemini-2.0-flash",
    name="template_helper_agent",
    instruction=my_instruction_provider
)
