"""Built-in tools: exit_loop (escalate out of a LoopAgent) and transfer_to_agent."""

from app.contexts.tool import ToolContext


def exit_loop(tool_context: ToolContext) -> dict[str, str]:
    """Exits the loop. Call this function only when you are instructed to do so."""
    tool_context.actions.escalate = True
    tool_context.actions.skip_summarization = True
    return {}


def transfer_to_agent(agent_name: str, tool_context: ToolContext) -> dict[str, str]:
    """Transfer the question to another agent.

    Args:
        agent_name: the agent name to transfer to.
    """
    tool_context.actions.transfer_to_agent = agent_name
    return {}
