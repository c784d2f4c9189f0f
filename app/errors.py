"""The error tree of agentd and its mapping to RFC 9457 problem details.

Every error a domain package raises is an `AgentdError` subclass carrying a stable problem `type`
slug, an HTTP status and a title. The classes derive from `rfc9457.Problem` so that the
`fastapi-problem` handler installed by `app.main` renders them as `application/problem+json`
without per-route code; nothing here imports fastapi.
"""

from collections.abc import Mapping, MutableMapping
from typing import Any, ClassVar

import rfc9457


class AgentdError(rfc9457.Problem):
    """Base of every error agentd raises on purpose; rendered as problem+json."""

    problem_type: ClassVar[str] = "internal-error"
    status_code_: ClassVar[int] = 500
    default_title: ClassVar[str] = "Internal server error."

    def __init__(
        self,
        detail: str | None = None,
        *,
        headers: MutableMapping[str, str] | None = None,
        **extras: Any,
    ) -> None:
        super().__init__(
            self.default_title,
            type_=self.problem_type,
            detail=detail,
            status=self.status_code_,
            headers=headers,
            **extras,
        )


#: 503 problem types that no retry fixes: a stored one is raised again without Retry-After.
_NOT_RETRYABLE_503 = frozenset({"model-not-configured"})


class StoredProblem(AgentdError):
    """A problem recorded earlier (e.g. an invocation's error), raised again as it was."""

    def __init__(self, problem: Mapping[str, Any]) -> None:
        extras = {
            k: v for k, v in problem.items() if k not in {"type", "title", "detail", "status"}
        }
        status = int(problem.get("status") or 500)
        # Headers are not stored with a problem; a stored 503 still tells when to retry, unless
        # retrying cannot help (a model without credentials waits for its operator).
        retry = status == 503 and problem.get("type") not in _NOT_RETRYABLE_503
        headers = {"Retry-After": str(problem.get("retryAfter", 1))} if retry else None
        rfc9457.Problem.__init__(
            self,
            str(problem.get("title") or "Error."),
            type_=str(problem.get("type") or "internal-error"),
            detail=problem.get("detail"),
            status=status,
            headers=headers,
            **extras,
        )


class InternalError(AgentdError):
    """An unexpected failure; the detail never leaks internals."""

    def __init__(self, *_args: Any, **_kwargs: Any) -> None:
        super().__init__("The server failed to handle the request; it has been logged.")


class NotFoundError(AgentdError):
    """Something addressed by the request does not exist (or is not visible to the caller)."""

    problem_type = "not-found"
    status_code_ = 404
    default_title = "Not found."


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


class FunctionCallNotFound(NotFoundError):
    """An answer for a call the invocation never made."""

    problem_type = "function-call-not-found"
    default_title = "Function call not found."


class SessionNotFound(NotFoundError):
    """No such session for this app and user."""

    problem_type = "session-not-found"
    default_title = "Session not found."


class ArtifactNotFound(NotFoundError):
    """No such artifact, or no such version of it."""

    problem_type = "artifact-not-found"
    default_title = "Artifact not found."


class ConflictError(AgentdError):
    """The request conflicts with the current state of a resource."""

    problem_type = "conflict"
    status_code_ = 409
    default_title = "Conflict."


class SessionAlreadyExists(ConflictError):
    """A session with the requested id already exists."""

    problem_type = "session-exists"
    default_title = "Session already exists."


class SessionConflict(ConflictError):
    """The session changed since the writer last read it (optimistic concurrency check failed)."""

    problem_type = "session-conflict"
    default_title = "Session was modified concurrently."

    def __init__(
        self,
        detail: str | None = None,
        *,
        expected_seq: int | None = None,
        actual_seq: int | None = None,
    ) -> None:
        extras: dict[str, Any] = {"expectedSeq": expected_seq, "actualSeq": actual_seq}
        super().__init__(detail, **{k: v for k, v in extras.items() if v is not None})
        self.expected_seq = expected_seq
        self.actual_seq = actual_seq


class SessionRequiresAction(ConflictError):
    """An invocation of the session waits for the client; a new message was sent with
    `multitaskStrategy: reject` (answer it, or send with `interrupt` to cancel it first)."""

    problem_type = "session-requires-action"
    default_title = "An invocation of the session is waiting for an answer."


class FunctionCallAnswered(ConflictError):
    """An answer for a call the invocation no longer waits for (answered already)."""

    problem_type = "function-call-answered"
    default_title = "The function call was answered already."


class SessionBusy(ConflictError):
    """Another invocation runs on the session (strategy reject, or enqueue timed out)."""

    problem_type = "session-busy"
    default_title = "Session is busy."


class InvocationNotFound(NotFoundError):
    """No such invocation in this session."""

    problem_type = "invocation-not-found"
    default_title = "Invocation not found."


class InvocationNotResumable(ConflictError):
    """A run asked to continue an invocation that did not fail and was not cancelled (it
    completed, or is still queued or running); `invocationStatus` says which."""

    problem_type = "invocation-not-resumable"
    default_title = "Invocation cannot be resumed."


class IdempotencyKeyReused(AgentdError):
    """An Idempotency-Key already used with a different request body."""

    problem_type = "idempotency-key-reused"
    status_code_ = 422
    default_title = "Idempotency-Key reused with a different request."


class InvocationCancelled(AgentdError):
    """The invocation was cancelled before it completed."""

    problem_type = "invocation-cancelled"
    status_code_ = 409
    default_title = "Invocation cancelled."


class ActionExpired(AgentdError):
    """An invocation waited for the client longer than `AGENTD_ACTION_TIMEOUT_SECONDS`."""

    problem_type = "action-expired"
    status_code_ = 408
    default_title = "The invocation waited too long for an answer."


class InvocationInterrupted(AgentdError):
    """The replica running the invocation stopped (crash, kill, shutdown) before it completed."""

    problem_type = "invocation-interrupted"
    status_code_ = 503
    default_title = "Invocation interrupted."


class InvocationTimeout(AgentdError):
    """The invocation ran longer than AGENTD_MAX_INVOCATION_SECONDS."""

    problem_type = "invocation-timeout"
    status_code_ = 504
    default_title = "Invocation timed out."


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


class ResumeNotSupported(AgentdError):
    """A resumed invocation reached a workflow agent that cannot say what it runs after its
    finished sub-agent (a BaseAgent subclass without `_resume_after_async`): the resume stops
    with this problem, naming the agent, rather than silently skipping what it would run."""

    problem_type = "resume-not-supported"
    status_code_ = 501
    default_title = "This agent cannot continue a resumed invocation."


class InvocationFailed(AgentdError):
    """An agent, callback, tool or model raised; the invocation stopped at that step."""

    problem_type = "invocation-failed"
    status_code_ = 500
    default_title = "Invocation failed."


class LlmCallsLimitExceededError(AgentdError):
    """The invocation made more model calls than RunConfig.max_llm_calls allows."""

    problem_type = "llm-calls-limit-exceeded"
    status_code_ = 422
    default_title = "Model call limit exceeded."


class ArtifactVersionConflict(ConflictError):
    """An artifact version row collided with an existing one; nothing was written."""

    problem_type = "artifact-version-conflict"
    default_title = "Artifact version already exists."


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


class InvalidRequest(AgentdError):
    """The request is well-formed JSON but semantically invalid."""

    problem_type = "invalid-request"
    status_code_ = 422
    default_title = "Invalid request."


class InvalidAnswer(InvalidRequest):
    """An answer to a waiting call that cannot count as one: a function response not named as
    its call expects, or a confirmation whose `confirmed` is not a JSON boolean; nothing ran."""

    problem_type = "invalid-answer"
    default_title = "Invalid answer."


class UnstorableValue(InvalidRequest):
    """A value cannot be stored: not JSON-serialisable, or rejected by the database (e.g. NUL)."""

    problem_type = "unstorable-value"
    default_title = "Value cannot be stored."


class JsonTooDeep(InvalidRequest):
    """A JSON document nested deeper than AGENTD_MAX_JSON_DEPTH; `errors[0].loc` names where."""

    problem_type = "json-too-deep"
    default_title = "JSON nested too deeply."


class InvalidArtifactName(InvalidRequest):
    """An artifact name with traversal, control characters or over 512 bytes."""

    problem_type = "invalid-artifact-name"
    default_title = "Invalid artifact name."


class InvalidArtifact(InvalidRequest):
    """An artifact Part without inline data or text to store."""

    problem_type = "invalid-artifact"
    default_title = "Invalid artifact."


class RangeNotSatisfiable(AgentdError):
    """A Range header that does not overlap the artifact's bytes."""

    problem_type = "range-not-satisfiable"
    status_code_ = 416
    default_title = "Range not satisfiable."


class InvalidPageToken(InvalidRequest):
    """A pageToken that this server did not issue for this list."""

    problem_type = "invalid-page-token"
    status_code_ = 400
    default_title = "Invalid page token."


class InvalidIdentifier(InvalidRequest):
    """An app, user or session id that is empty, too long or has forbidden characters."""

    problem_type = "invalid-identifier"
    default_title = "Invalid identifier."


class Unauthenticated(AgentdError):
    """Missing, invalid, expired or revoked credentials."""

    problem_type = "unauthenticated"
    status_code_ = 401
    default_title = "Authentication required."

    def __init__(self, detail: str | None = None) -> None:
        super().__init__(detail, headers={"WWW-Authenticate": 'Bearer realm="agentd"'})


class Forbidden(AgentdError):
    """The principal may not do this (e.g. write `app:` state without being an admin)."""

    problem_type = "forbidden"
    status_code_ = 403
    default_title = "Forbidden."


class RateLimited(AgentdError):
    """Too many requests from this principal; retry after the given seconds."""

    problem_type = "rate-limited"
    status_code_ = 429
    default_title = "Too many requests."

    def __init__(self, retry_after: int) -> None:
        super().__init__(
            f"Retry after {retry_after} s.",
            headers={"Retry-After": str(retry_after)},
            retryAfter=retry_after,
        )


class PayloadTooLarge(AgentdError):
    """The request body exceeds the configured limit."""

    problem_type = "payload-too-large"
    status_code_ = 413
    default_title = "Request body too large."


class StateTooLarge(PayloadTooLarge):
    """The session state would exceed AGENTD_MAX_STATE_BYTES; nothing was written."""

    problem_type = "state-too-large"
    default_title = "Session state too large."


class EventTooLarge(PayloadTooLarge):
    """An event above AGENTD_MAX_EVENT_BYTES; nothing was written."""

    problem_type = "event-too-large"
    default_title = "Event too large."


class ImportTooLarge(PayloadTooLarge):
    """A session import of more than AGENTD_MAX_IMPORT_EVENTS events, refused before the rest
    of its body is parsed; nothing was written."""

    problem_type = "import-too-large"
    default_title = "Session import too large."


class ArtifactTooLarge(PayloadTooLarge):
    """An artifact above AGENTD_MAX_ARTIFACT_BYTES; nothing was stored."""

    problem_type = "artifact-too-large"
    default_title = "Artifact too large."


class ServiceUnavailable(AgentdError):
    """A dependency (database, blob store) is unreachable."""

    problem_type = "service-unavailable"
    status_code_ = 503
    default_title = "Service unavailable."


class DatabaseUnavailable(ServiceUnavailable):
    """The database cannot be reached or cannot write right now; retrying later may succeed.

    Raised by the unit of work (app.db.uow) for connection failures, a database that stopped or
    went read-only, and pool timeouts; nothing was committed. The driver's text is only logged.
    """

    problem_type = "database-unavailable"
    default_title = "Database unavailable."

    def __init__(self, detail: str | None = None, *, retry_after: int = 1) -> None:
        super().__init__(
            detail or "The database cannot be reached right now. Retry later.",
            headers={"Retry-After": str(retry_after)},
        )


class OutcomeUnknown(AgentdError):
    """A write was sent but its commit was not confirmed: it may or may not have taken effect.

    Unlike a 503, retrying blindly is not safe: look the resource up (an invocation's id is in
    `invocationId`) or retry with the same Idempotency-Key, which returns the original result
    if the first try committed. Status 500, not 503, because common clients retry 503s.
    """

    problem_type = "outcome-unknown"
    default_title = "Outcome unknown."


class LeaseLost(AgentdError):
    """A run's write was refused: another attempt holds its invocation's lease now (fencing).

    Never a client's answer: the run that gets it stops without writing anything more, and the
    attempt that took it over answers for the invocation.
    """

    problem_type = "lease-lost"
    status_code_ = 409
    default_title = "Lease lost."


class ArtifactStorageUnavailable(ServiceUnavailable):
    """Artifact bytes cannot be stored or read right now (blob folder not writable, S3 down or not
    answering in time); retrying later may succeed. The store's own text (server paths, S3 errors)
    is only logged."""

    problem_type = "blob-store-unavailable"
    default_title = "Blob store unavailable."

    def __init__(self, detail: str | None = None, *, retry_after: int = 5) -> None:
        super().__init__(
            detail or "The blob store cannot be used right now. Retry later.",
            headers={"Retry-After": str(retry_after)},
        )


class ArtifactStorageFull(AgentdError):
    """The blob store has no space left for an artifact's bytes; nothing was stored."""

    problem_type = "insufficient-storage"
    status_code_ = 507
    default_title = "Insufficient storage."


class MissingStateKey(KeyError):
    """An instruction names a state key that is not set (and is not optional); a KeyError, as
    ADK raises, so agent code that catches KeyError keeps working."""


# -- storage errors: raised by the unit of work (app.db.uow), never shown to clients as such;
# services translate them into the problems above (a taken id, a value the database refuses).


class DuplicateKey(Exception):
    """A unique or foreign-key constraint refused a write; the transaction was rolled back."""


class RejectedValue(Exception):
    """The database refused a statement for another reason (a value it cannot hold, a lost
    connection); the transaction was rolled back."""


# -- blob store errors: raised by the BlobStore backends (app.artifacts.blobstore); the artifact
# service translates them into the problems above (too large, service unavailable).


class BlobStoreError(Exception):
    """Base of the errors a blob store raises on purpose."""


class BlobNotFound(BlobStoreError):
    """No blob is stored under the key."""

    def __init__(self, key: str) -> None:
        super().__init__(f"no blob stored under {key!r}")
        self.key = key


class BlobTooLarge(BlobStoreError):
    """The stream being stored exceeded `max_bytes`; nothing was stored."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"blob exceeds the limit of {limit} bytes")
        self.limit = limit


class BlobStoreUnavailable(BlobStoreError):
    """The backend cannot be reached or used (readiness failure, network or permission error)."""


class BlobStoreFull(BlobStoreUnavailable):
    """The backend has no space left (disk full, quota exceeded); nothing was stored."""


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


class UnsupportedMediaType(AgentdError):
    """A JSON route got a body declared as something else (`curl -d` sends form encoding).

    415 (RFC 9110 section 15.5.16: the content's format is not supported by the target), not
    FastAPI's 422 "Input should be a valid dictionary", which read as a schema error and never
    named the header; the detail names `Content-Type: application/json`.
    """

    problem_type = "unsupported-media-type"
    status_code_ = 415
    default_title = "Unsupported media type."
