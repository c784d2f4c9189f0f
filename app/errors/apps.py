"""Errors about the apps themselves: unknown, failing to load, or asking for what this server
refuses (local code execution, Google Cloud services).
"""

from app.errors.base import AgentdError, NotFoundError


class AppNotFound(NotFoundError):
    """No app of that name in the agents directory."""

    problem_type = "app-not-found"
    default_title = "App not found."


class AppLoadError(AgentdError):
    """An app folder exists but its code cannot be imported or defines no agent."""

    problem_type = "app-load-failed"
    status_code_ = 500
    default_title = "App failed to load."


class LocalCodeExecutionDisabled(AgentdError):
    """An agent asked for UnsafeLocalCodeExecutor, which the operator did not allow."""

    problem_type = "local-code-execution-disabled"
    status_code_ = 500
    default_title = "Local code execution is disabled."


class GoogleCloudNotSupported(AgentdError):
    """An ADK service tied to Google Cloud (GCS, Vertex AI) was constructed; agentd has none."""

    problem_type = "google-cloud-not-supported"
    status_code_ = 501
    default_title = "Google Cloud services are not supported."

    def __init__(self, name: str, instead: str) -> None:
        super().__init__(
            f"{name} is not available: agentd does not integrate Google Cloud services. "
            f"Use {instead} instead."
        )


class MissingStateKey(KeyError):
    """An instruction names a state key that is not set (and is not optional); a KeyError, as
    ADK raises, so agent code that catches KeyError keeps working."""
