# Source: google/adk-python contributing/samples/plugin_basic/main.py (the "Plugin Basic" sample the
#   ADK "Plugins" page links to: https://google.github.io/adk-docs/plugins/#define-and-register-plugins)
#   Registers the plugin on InMemoryRunner(agent=..., app_name=..., plugins=[...]).
# Changed: only the imports (`google.adk` -> `app`); license header dropped. The model name is
# kept: the test points the Gemini backend at the local Gemini API stub.
import asyncio

from app import Agent
from app.runners import InMemoryRunner
from app.tools.tool_context import ToolContext
from google.genai import types

# [Step 2] Import the plugin.
from .count_plugin import CountInvocationPlugin


async def hello_world(tool_context: ToolContext, query: str):
    print(f"Hello world: query is [{query}]")


root_agent = Agent(
    model="gemini-2.0-flash",
    name="hello_world",
    description="Prints hello world with user query.",
    instruction="""Use hello_world tool to print hello world and user query.
    """,
    tools=[hello_world],
)


async def main():
    """Main entry point for the agent."""
    prompt = "hello world"
    runner = InMemoryRunner(
        agent=root_agent,
        app_name="test_app_with_plugin",
        # [Step 2] Add your plugin here. You can add multiple plugins.
        plugins=[CountInvocationPlugin()],
    )
    session = await runner.session_service.create_session(
        user_id="user",
        app_name="test_app_with_plugin",
    )

    async for event in runner.run_async(
        user_id="user",
        session_id=session.id,
        new_message=types.Content(
            role="user", parts=[types.Part.from_text(text=prompt)]
        ),
    ):
        print(f"** Got event from {event.author}")


if __name__ == "__main__":
    asyncio.run(main())
