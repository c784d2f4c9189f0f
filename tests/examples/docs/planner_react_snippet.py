# Source: ADK docs, "LLM Agent" > "Configure a planner" (the `PlanReActPlanner` snippet)
#   https://google.github.io/adk-docs/agents/llm-agents/#configure-a-planner
# Changed: only the imports (`google.adk` -> `app`). The test runs `my_agent` against the local
# Gemini API stub, which answers in the /*PLANNING*/ ... /*FINAL_ANSWER*/ format the page shows.
from app import Agent
from app.planners import PlanReActPlanner

my_agent = Agent(
    name="my_agent",
    model="gemini-flash-latest",
    planner=PlanReActPlanner(),
    # ... your tools here
)
