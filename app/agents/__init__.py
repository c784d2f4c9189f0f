"""Agents: LlmAgent and the workflow agents, ADK-style."""

from app.agents.base_agent import BaseAgent
from app.agents.llm_agent import Agent, LlmAgent
from app.agents.workflow import LoopAgent, ParallelAgent, SequentialAgent
from app.contexts.callback import CallbackContext
from app.contexts.invocation import InvocationContext, RunConfig
from app.contexts.readonly import ReadonlyContext

__all__ = [
    "Agent",
    "BaseAgent",
    "CallbackContext",
    "InvocationContext",
    "LlmAgent",
    "LoopAgent",
    "ParallelAgent",
    "ReadonlyContext",
    "RunConfig",
    "SequentialAgent",
]
