# Source: ADK docs, "State: The Session's Scratchpad" > "Accessing Session State in Agent
#   Instructions" > "Using {key} Templating", https://google.github.io/adk-docs/sessions/state/
# Changed: only the imports (`google.adk` -> `app`). The test runs the agent against the local
# Gemini API stub with session.state['topic'] = "friendship" and reads the instruction it sent.
from app.agents import LlmAgent

story_generator = LlmAgent(
    name="StoryGenerator",
    model="gemini-2.0-flash",
    instruction="""Write a short story about a cat, focusing on the theme: {topic}."""
)

# Assuming session.state['topic'] is set to "friendship", the LLM
# will receive the following instruction:
# "Write a short story about a cat, focusing on the theme: friendship."
