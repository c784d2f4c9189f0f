"""Artifact wire models and name rules."""

import re
from typing import Any

from pydantic import Field

from app.errors import InvalidArtifactName
from app.wire import WireModel, check_storable

MAX_NAME_BYTES = 512
USER_PREFIX = "user:"

#: Path segments that the HTTP routes use after a name; a name segment may not be one of them,
#: so `GET .../artifacts/{name}/versions` is never ambiguous.
RESERVED_SEGMENTS = frozenset({"versions", "content", "metadata"})
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def validate_artifact_name(name: str) -> str:
    """Return `name` if it is a safe artifact name, else raise InvalidArtifactName.

    Nested names (`reports/q1.pdf`) are allowed; empty, `.` and `..` segments, absolute paths,
    backslashes, control characters and names over 512 UTF-8 bytes are not. The name is never used
    to build a path (blobs are content-addressed), but clients often mirror names to disk.
    """
    if not name or len(name.encode("utf-8")) > MAX_NAME_BYTES:
        raise InvalidArtifactName(f"Artifact names are 1 to {MAX_NAME_BYTES} UTF-8 bytes.")
    if _CONTROL.search(name) or "\\" in name:
        raise InvalidArtifactName("Artifact names may not contain control characters or '\\'.")
    path = name.removeprefix(USER_PREFIX)
    segments = path.split("/")
    if path.startswith("/") or any(s in {"", ".", ".."} for s in segments):
        raise InvalidArtifactName("Artifact names may not be absolute or contain '.'/'..' parts.")
    if any(s in RESERVED_SEGMENTS for s in segments[1:]) or segments[-1] in RESERVED_SEGMENTS:
        raise InvalidArtifactName(
            f"Artifact name segments may not be one of {sorted(RESERVED_SEGMENTS)}."
        )
    return name


def check_version_values(mime_type: str, custom_metadata: dict[str, Any] | None) -> None:
    """Raise UnstorableValue naming the field if a version's mime type or custom metadata cannot
    be stored (NUL, which PostgreSQL refuses; NaN; an integer beyond 64 bits), on every backend
    alike and before any byte is stored."""
    check_storable(mime_type, ("mimeType",))
    if custom_metadata:
        check_storable(custom_metadata, ("customMetadata",))


def is_user_scoped(name: str) -> bool:
    """Whether the artifact belongs to the user (all sessions) rather than one session."""
    return name.startswith(USER_PREFIX)


class ArtifactVersion(WireModel):
    """Metadata of one stored version (ADK's ArtifactVersion plus size and sha256).

    `mime_type` is None for a version saved from a text Part, as in ADK, whose routes then leave
    the key out.
    """

    version: int
    canonical_uri: str
    custom_metadata: dict[str, Any] = Field(default_factory=dict)
    create_time: float
    mime_type: str | None = None
    size: int
    sha256: str
