"""Problems of the request itself: invalid, unauthenticated, forbidden, too large or too
frequent.
"""

from app.errors.base import AgentdError, InvalidRequest, PayloadTooLarge


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


class UnsupportedMediaType(AgentdError):
    """A JSON route got a body declared as something else (`curl -d` sends form encoding).

    415 (RFC 9110 section 15.5.16: the content's format is not supported by the target), not
    FastAPI's 422 "Input should be a valid dictionary", which read as a schema error and never
    named the header; the detail names `Content-Type: application/json`.
    """

    problem_type = "unsupported-media-type"
    status_code_ = 415
    default_title = "Unsupported media type."
