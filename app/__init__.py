"""agentd: hosts LLM agents and keeps their sessions, invocations and artifacts.

`from app import Agent, Runner` works as `from google.adk import Agent, Runner` does; both are
resolved on first use so that importing `app` (every submodule does) stays cheap.
"""

from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from app.agents.llm_agent import Agent
    from app.runners import Runner

try:
    __version__ = version("agentd")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+unknown"

__all__ = ["Agent", "Runner", "__version__"]


def __getattr__(name: str) -> object:
    # ADK's top-level names, imported only when asked for (as app.main resolves `app`).
    if name == "Agent":
        from app.agents.llm_agent import Agent

        globals()["Agent"] = Agent
        return Agent
    if name == "Runner":
        from app.runners import Runner

        globals()["Runner"] = Runner
        return Runner
    raise AttributeError(f"module 'app' has no attribute {name!r}")
