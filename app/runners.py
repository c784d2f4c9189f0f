"""ADK import path: `from app.runners import Runner, InMemoryRunner`."""

from app.invocations.runner import App, InMemoryRunner, InvocationFailed, Runner

__all__ = ["App", "InMemoryRunner", "InvocationFailed", "Runner"]
