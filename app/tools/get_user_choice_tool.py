"""get_user_choice: offer the user options and wait for their pick (ADK's long-running tool).

The module's `get_user_choice` is the function; the package exports the tool
(`get_user_choice_tool`) under that name, as ADK does, so `tools=[get_user_choice]` declares a
long-running call that pauses the invocation until the client answers it with the choice.
"""

from app.contexts.tool import ToolContext
from app.tools.long_running_tool import LongRunningFunctionTool


def get_user_choice(options: list[str], tool_context: ToolContext) -> str | None:
    """Provides the options to the user and asks them to choose one."""
    del options  # the client shows them from the function call's arguments
    tool_context.actions.skip_summarization = True
    return None


get_user_choice_tool = LongRunningFunctionTool(get_user_choice)
