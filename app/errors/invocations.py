"""Problems of invocations: not found, not resumable, cancelled, timed out, or whose run lost
its lease or outcome.
"""

from app.errors.base import AgentdError, ConflictError, NotFoundError


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
