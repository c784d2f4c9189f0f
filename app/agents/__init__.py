"""Agents: LlmAgent and the workflow agents, ADK-style."""

from app.agents.base_agent import BaseAgent
from app.agents.llm_agent import Agent, LlmAgent
from app.agents.workflow import LoopAgent, ParallelAgent, SequentialAgent
from app.contexts.callback import CallbackContext
from app.contexts.invocation import InvocationContext, RunConfig
from app.contexts.readonly import ReadonlyContext
from app.contexts.tool import ToolContext

# ADK 2.x names one context class `Context` for callbacks and tools alike. Its tool-side members
# (function_call_id, actions, search_memory, request_credential) live on agentd's ToolContext,
# so that is the class the name stands for; callbacks still receive a CallbackContext.
Context = ToolContext

__all__ = [
    "Agent",
    "BaseAgent",
    "CallbackContext",
    "Context",
    "InvocationContext",
    "LlmAgent",
    "LoopAgent",
    "ParallelAgent",
    "ReadonlyContext",
    "RunConfig",
    "SequentialAgent",
]
