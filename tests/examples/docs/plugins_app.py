# Source: ADK docs, "Plugins" > "Register plugin class" (Python tab: App(plugins=...) + InMemoryRunner(app=app))
#   https://google.github.io/adk-docs/plugins/#register-plugin-class
# Changed: only the imports (`google.adk` -> `app`). The model name is kept: the test points the
# Gemini backend at the local Gemini API stub (tests/gemini_stub.py). `from .count_plugin import`
# resolves to tests/examples/docs/count_plugin.py (the doc's count_plugin.py).
from app.runners import InMemoryRunner
from app import Agent
from app.apps import App
from app.tools.tool_context import ToolContext
from google.genai import types
import asyncio

# Import the plugin.
from .count_plugin import CountInvocationPlugin

async def hello_world(tool_context: ToolContext, query: str):
    print(f'Hello world: query is [{query}]')

root_agent = Agent(
    model='gemini-flash-latest',
    name='hello_world',
    description='Prints hello world with user query.',
    instruction="""Use hello_world tool to print hello world and user query.
    """,
    tools=[hello_world],
)

app = App(
    name='test_app_with_plugin',
    root_agent=root_agent,

    # Add your plugin here. You can add multiple plugins.
    plugins=[CountInvocationPlugin()],
)

async def main():
    """Main entry point for the agent."""
    prompt = 'hello world'
    runner = InMemoryRunner(app=app)

    # The rest is the same as starting a regular ADK runner.
    session = await runner.session_service.create_session(
        user_id='user',
        app_name='test_app_with_plugin',
    )

    async for event in runner.run_async(
        user_id='user',
        session_id=session.id,
        new_message=types.Content(
            role='user', parts=[types.Part.from_text(text=prompt)]
        )
    ):
        print(f'** Got event from {event.author}')

if __name__ == "__main__":
    asyncio.run(main())
