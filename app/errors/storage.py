"""Storage failures, and overload. The problems (database or artifact storage unavailable or
full, too many invocations in flight) reach clients; the plain exceptions below them never do:
the unit of work (app.db.uow) raises `DuplicateKey` / `RejectedValue` and the BlobStore
backends (app.artifacts.blobstore) the `BlobStore*` errors, which services translate into
problems.
"""

from app.errors.base import AgentdError, ServiceUnavailable


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


class DuplicateKey(Exception):
    """A unique or foreign-key constraint refused a write; the transaction was rolled back."""


class RejectedValue(Exception):
    """The database refused a statement for another reason (a value it cannot hold, a lost
    connection); the transaction was rolled back."""


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


class Overloaded(ServiceUnavailable):
    """This process runs as many invocations as it may (`AGENTD_MAX_INFLIGHT_INVOCATIONS`):
    a new one is refused before anything is stored, so a retry (after `Retry-After`, perhaps
    on another replica) starts it cleanly."""

    problem_type = "overloaded"
    default_title = "Too many invocations in flight."

    def __init__(self, limit: int, *, retry_after: int = 1) -> None:
        super().__init__(
            f"This server runs {limit} invocations at once, its limit. Retry later.",
            headers={"Retry-After": str(retry_after)},
        )
