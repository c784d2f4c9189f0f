"""The base of agentd's error tree: `AgentdError` (an `rfc9457.Problem` with a stable `type`
slug, a status and a title) and the generic kinds the domain errors refine.
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


class ConflictError(AgentdError):
    """The request conflicts with the current state of a resource."""

    problem_type = "conflict"
    status_code_ = 409
    default_title = "Conflict."


class InvalidRequest(AgentdError):
    """The request is well-formed JSON but semantically invalid."""

    problem_type = "invalid-request"
    status_code_ = 422
    default_title = "Invalid request."


class PayloadTooLarge(AgentdError):
    """The request body exceeds the configured limit."""

    problem_type = "payload-too-large"
    status_code_ = 413
    default_title = "Request body too large."


class ServiceUnavailable(AgentdError):
    """A dependency (database, blob store) is unreachable."""

    problem_type = "service-unavailable"
    status_code_ = 503
    default_title = "Service unavailable."
