"""Problems of the model and tool calls an invocation makes on its caller's behalf."""

from typing import Any, ClassVar

from app.errors.base import AgentdError


class ModelError(AgentdError):
    """A model provider failed to answer (after the provider SDK's own bounded retries).

    Raised by every model backend in place of its SDK's exceptions, so callbacks, fallback
    chains and the stored error event see one shape: `provider`, `model`, the upstream HTTP
    status (`upstream_status`, None when nothing answered) and whether another attempt may
    succeed (`retryable`).
    """

    problem_type = "model-error"
    status_code_ = 502
    default_title = "The model failed to answer."
    #: Whether trying again (or another model) may succeed: rate limits and server errors.
    retryable: ClassVar[bool] = False

    def __init__(
        self,
        detail: str | None = None,
        *,
        provider: str = "",
        model: str = "",
        status: int | None = None,
        **extras: Any,
    ) -> None:
        super().__init__(detail, provider=provider, model=model, upstreamStatus=status, **extras)
        self.provider = provider
        self.model = model
        self.upstream_status = status


class ModelRateLimited(ModelError):
    """The provider refused for now (HTTP 429), also after the retries."""

    problem_type = "model-rate-limited"
    status_code_ = 503
    default_title = "The model provider is rate limiting requests."
    retryable = True


class ModelUnavailable(ModelError):
    """The provider failed (5xx, overloaded, timeout, connection refused), also after retries."""

    problem_type = "model-unavailable"
    status_code_ = 503
    default_title = "The model provider is unavailable."
    retryable = True


class ToolCallFailed(AgentdError):
    """A tool failed in a way the model is told about: when no on_tool_error callback answers,
    the call's function response is `{"error": <this problem>}` and the invocation goes on."""

    problem_type = "tool-call-failed"
    status_code_ = 502
    default_title = "The tool call failed."


class McpToolFailed(ToolCallFailed):
    """An MCP server answered a tool call with an error, or could not be reached (it died, its
    session broke, the call timed out)."""

    problem_type = "mcp-tool-failed"
    default_title = "The MCP tool call failed."


class ModelRequestRejected(ModelError):
    """The provider rejected the request (4xx other than 429: bad request, auth, not found)."""

    problem_type = "model-request-rejected"
    status_code_ = 502
    default_title = "The model provider rejected the request."


class ModelNotServed(ModelError):
    """The model names a provider agentd has no backend for (`LiteLlm("vertex_ai/...")`): the
    app loads as it does under ADK, and each call to that model fails with this problem."""

    problem_type = "model-not-served"
    status_code_ = 501
    default_title = "agentd does not serve this model."


class ModelNotConfigured(ModelRequestRejected):
    """A model backend has no credentials (or endpoint) to call its provider with: nothing was
    sent. The detail names the environment variable(s) to set and `variables` lists them.

    One class for every backend (Gemini, Vertex AI, OpenAI, Azure OpenAI, the OpenAI-compatible
    providers, Claude), so a client learns the fix from one problem type. A subclass of
    `ModelRequestRejected` because, like a rejected request, retrying the same model cannot
    help (code catching that keeps working); status 503 rather than 502, since no provider
    answered: this server cannot serve the model until its operator configures it.
    """

    problem_type = "model-not-configured"
    status_code_ = 503
    default_title = "The model is not configured."

    def __init__(
        self, detail: str, *, provider: str, model: str, variables: list[str], **extras: Any
    ) -> None:
        super().__init__(detail, provider=provider, model=model, variables=variables, **extras)
        self.variables = variables
