"""ReadonlyContext: what instruction providers and tool filters may read but not change."""

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from google.genai import types

from app.contexts.invocation import InvocationContext, RunConfig
from app.sessions.models import Session


class ReadonlyContext:
    """A read-only view of the invocation."""

    def __init__(self, invocation_context: InvocationContext) -> None:
        self._invocation_context = invocation_context

    @property
    def user_content(self) -> types.Content | None:
        """The user message that started the invocation."""
        return self._invocation_context.user_content

    @property
    def invocation_id(self) -> str:
        """The id shared by every event of the invocation."""
        return self._invocation_context.invocation_id

    @property
    def agent_name(self) -> str:
        """The name of the agent running now."""
        return self._invocation_context.agent.name

    @property
    def state(self) -> Mapping[str, Any]:
        """The merged session state, read-only."""
        return MappingProxyType(self._invocation_context.session.state)

    @property
    def user_id(self) -> str:
        """The user the invocation runs for."""
        return self._invocation_context.user_id

    @property
    def app_name(self) -> str:
        """The app name."""
        return self._invocation_context.app_name

    @property
    def session_id(self) -> str:
        """The session id."""
        return self._invocation_context.session.id

    @property
    def branch(self) -> str | None:
        """The agent's branch (`parent.child` inside a ParallelAgent)."""
        return self._invocation_context.branch

    @property
    def session(self) -> Session:
        """The session as the invocation sees it (ADK; read it, change it through `state`)."""
        return self._invocation_context.session

    @property
    def run_config(self) -> RunConfig:
        """The invocation's run configuration."""
        return self._invocation_context.run_config
