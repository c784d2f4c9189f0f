# Source: ADK docs, "LLM Agent" > "Configure a planner" (the `BuiltInPlanner` snippet)
#   https://google.github.io/adk-docs/agents/llm-agents/#configure-a-planner
# Changed: only the imports (`google.adk` -> `app`). The test runs `my_agent` against the local
# Gemini API stub.
from app import Agent
from app.planners import BuiltInPlanner
from google.genai import types

my_agent = Agent(
    name="my_agent",
    model="gemini-flash-latest",
    planner=BuiltInPlanner(
        thinking_config=types.ThinkingConfig(
            include_thoughts=True,
            thinking_budget=1024,
        )
    ),
    # ... your tools here
)
