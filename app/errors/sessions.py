"""Problems of sessions, their events and artifacts: not found, taken, or changed under the
caller.
"""

from typing import Any

from app.errors.base import ConflictError, NotFoundError


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


class ArtifactVersionConflict(ConflictError):
    """An artifact version row collided with an existing one; nothing was written."""

    problem_type = "artifact-version-conflict"
    default_title = "Artifact version already exists."
