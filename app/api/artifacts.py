"""Artifact routes: ADK's JSON routes, plus raw-content upload and download.

Names may be nested (`reports/q1.pdf`), so `{name:path}` captures them; the routes with a suffix
(`/versions`, `/content`, `/metadata`) are registered first and those words are not allowed as name
segments, so matching is never ambiguous. Raw downloads stream from the blob store with a strong
ETag (the sha256), `If-None-Match` (304) and single `Range` requests (206); raw uploads stream into
the blob store, never holding the body in memory.

A version saved from a text Part loads as `{"text": ...}` and its metadata has no `mimeType`
(ADK's shapes); its raw download is `text/plain; charset=utf-8`.
"""

import re
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Header, Path, Query, Request, Response, status
from fastapi.responses import JSONResponse, StreamingResponse
from google.genai import types
from pydantic import Field

from app.api.deps import ArtifactServiceDep, KnownApp, SessionIdPath, SettingsDep, UserIdPath
from app.api.json_body import JsonRoute, parse_json
from app.artifacts.base import DEFAULT_MIME_TYPE, ArtifactScope
from app.artifacts.models import ArtifactVersion
from app.errors import InvalidRequest, RangeNotSatisfiable
from app.wire import ClientPart, WireModel

router = APIRouter(
    route_class=JsonRoute,
    prefix="/apps/{app_name}/users/{user_id}/sessions/{session_id}/artifacts",
    tags=["artifacts"],
)

_RANGE = re.compile(r"^bytes=(\d*)-(\d*)$")
NOT_FOUND: dict[int | str, dict[str, Any]] = {
    404: {"description": "No such session or artifact (artifact-not-found)."}
}


async def artifact_scope(
    app: KnownApp, user_id: UserIdPath, session_id: SessionIdPath
) -> ArtifactScope:
    """The session (and user) whose artifacts the route addresses."""
    return ArtifactScope(app_name=app.name, user_id=user_id, session_id=session_id)


ScopeDep = Annotated[ArtifactScope, Depends(artifact_scope)]
VersionQuery = Annotated[int | None, Query(ge=0, le=2**31 - 1)]
VersionPath = Annotated[int, Path(ge=0, le=2**31 - 1)]


class SaveArtifactRequest(WireModel):
    """ADK's save request: a name and a Part (inline data or text)."""

    filename: str = Field(min_length=1, max_length=512)
    artifact: ClientPart
    custom_metadata: dict[str, Any] | None = None


def _part_json(part: types.Part) -> JSONResponse:
    return JSONResponse(part.model_dump(mode="json", by_alias=True, exclude_none=True))


@router.get(
    "",
    summary="List artifact names (session's and the user's)",
    responses=NOT_FOUND,
)
async def list_artifact_names(scope: ScopeDep, artifacts: ArtifactServiceDep) -> list[str]:
    """Names of the session's artifacts and of the user's `user:` artifacts."""
    return await artifacts.list_names(scope)


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    response_model_exclude_none=True,
    summary="Save a new artifact version from a JSON Part",
    responses={**NOT_FOUND, 413: {"description": "Too large (artifact-too-large)."}},
)
async def save_artifact(
    scope: ScopeDep, body: SaveArtifactRequest, artifacts: ArtifactServiceDep
) -> ArtifactVersion:
    """Store the Part as the next version, recorded as a user event with its artifactDelta."""
    return await artifacts.save_part(
        scope, filename=body.filename, artifact=body.artifact, custom_metadata=body.custom_metadata
    )


@router.get(
    "/{name:path}/versions/{version:int}/metadata",
    response_model_exclude_none=True,
    summary="Metadata of one artifact version",
    responses=NOT_FOUND,
)
async def get_artifact_version_metadata(
    scope: ScopeDep, name: str, version: VersionPath, artifacts: ArtifactServiceDep
) -> ArtifactVersion:
    """Version, mime type (none for text), size, sha256, custom metadata, creation time, URI."""
    return (await artifacts.get(scope, filename=name, version=version)).metadata


@router.get(
    "/{name:path}/versions/{version:int}/content",
    summary="Download one artifact version's raw bytes",
    responses={
        **NOT_FOUND,
        206: {"description": "Partial content."},
        304: {"description": "Not modified."},
    },
    response_class=StreamingResponse,
)
async def download_artifact_version(
    scope: ScopeDep,
    name: str,
    version: VersionPath,
    artifacts: ArtifactServiceDep,
    range_: Annotated[str | None, Header(alias="Range")] = None,
    if_none_match: Annotated[str | None, Header()] = None,
) -> Response:
    """Raw bytes with Content-Type, Content-Length, ETag; honours Range and If-None-Match."""
    return await _download(artifacts, scope, name, version, range_, if_none_match)


@router.get(
    "/{name:path}/versions/metadata",
    response_model_exclude_none=True,
    summary="Metadata of every version of an artifact",
    responses=NOT_FOUND,
)
async def list_artifact_version_metadata(
    scope: ScopeDep, name: str, artifacts: ArtifactServiceDep
) -> list[ArtifactVersion]:
    """All versions' metadata, oldest first."""
    return await artifacts.list_version_metadata(scope, filename=name)


@router.get(
    "/{name:path}/versions/{version:int}",
    summary="Load one artifact version as a Part",
    response_model=types.Part,
    responses=NOT_FOUND,
)
async def load_artifact_version(
    scope: ScopeDep, name: str, version: VersionPath, artifacts: ArtifactServiceDep
) -> JSONResponse:
    """The version as a google-genai Part: text if saved from text, else inline data (ADK)."""
    return _part_json(await artifacts.load_part(scope, filename=name, version=version))


@router.get(
    "/{name:path}/versions",
    summary="List an artifact's version numbers",
    responses=NOT_FOUND,
)
async def list_artifact_versions(
    scope: ScopeDep, name: str, artifacts: ArtifactServiceDep
) -> list[int]:
    """Version numbers, ascending (ADK)."""
    return await artifacts.list_versions(scope, filename=name)


@router.put(
    "/{name:path}/content",
    status_code=status.HTTP_201_CREATED,
    response_model_exclude_none=True,
    summary="Upload a new artifact version as a raw or multipart body (streamed)",
    responses={**NOT_FOUND, 413: {"description": "Too large (artifact-too-large)."}},
    openapi_extra={
        "requestBody": {
            "content": {
                "application/octet-stream": {"schema": {"type": "string", "format": "binary"}}
            }
        }
    },
)
async def upload_artifact_content(
    scope: ScopeDep,
    name: str,
    request: Request,
    artifacts: ArtifactServiceDep,
    settings: SettingsDep,
    x_artifact_metadata: Annotated[str | None, Header(max_length=8192)] = None,
) -> ArtifactVersion:
    """The body (or the multipart field `file`) becomes the next version of `name`."""
    metadata = _parse_metadata(x_artifact_metadata, settings.max_json_depth)
    content_type = request.headers.get("content-type", DEFAULT_MIME_TYPE)
    if content_type.startswith("multipart/form-data"):
        form = await request.form(max_files=1, max_fields=0)
        upload = form.get("file")
        if upload is None or isinstance(upload, str):
            raise InvalidRequest("A multipart upload needs one file field named 'file'.")

        async def chunks() -> Any:
            while chunk := await upload.read(64 * 1024):
                yield chunk

        return await artifacts.save_stream(
            scope,
            filename=name,
            chunks=chunks(),
            mime_type=upload.content_type or DEFAULT_MIME_TYPE,
            custom_metadata=metadata,
        )
    return await artifacts.save_stream(
        scope,
        filename=name,
        chunks=request.stream(),
        mime_type=content_type,
        custom_metadata=metadata,
    )


@router.get(
    "/{name:path}/content",
    summary="Download the latest artifact version's raw bytes",
    responses={
        **NOT_FOUND,
        206: {"description": "Partial content."},
        304: {"description": "Not modified."},
    },
    response_class=StreamingResponse,
)
async def download_artifact(
    scope: ScopeDep,
    name: str,
    artifacts: ArtifactServiceDep,
    range_: Annotated[str | None, Header(alias="Range")] = None,
    if_none_match: Annotated[str | None, Header()] = None,
) -> Response:
    """Raw bytes of the latest version; honours Range and If-None-Match."""
    return await _download(artifacts, scope, name, None, range_, if_none_match)


@router.get(
    "/{name:path}",
    summary="Load an artifact (latest or ?version=) as a Part",
    response_model=types.Part,
    responses=NOT_FOUND,
)
async def load_artifact(
    scope: ScopeDep, name: str, artifacts: ArtifactServiceDep, version: VersionQuery = None
) -> JSONResponse:
    """The version as a google-genai Part: text if saved from text, else inline data (ADK)."""
    return _part_json(await artifacts.load_part(scope, filename=name, version=version))


@router.delete(
    "/{name:path}",
    response_model=None,
    summary="Delete every version of an artifact (200 `null`, as ADK)",
    responses=NOT_FOUND,
)
async def delete_artifact(scope: ScopeDep, name: str, artifacts: ArtifactServiceDep) -> Response:
    """Remove the artifact's versions, answering ADK's 200 `null`; 404 if it has none."""
    await artifacts.delete(scope, filename=name)
    return JSONResponse(None)


def _parse_metadata(raw: str | None, max_depth: int) -> dict[str, Any] | None:
    if raw is None:
        return None
    try:
        # The header's bytes as sent (Starlette decodes headers as latin-1), checked as a body.
        value = parse_json(raw.encode("latin-1"), ("header", "X-Artifact-Metadata"), max_depth)
    except ValueError as exc:
        raise InvalidRequest("X-Artifact-Metadata must be a JSON object.") from exc
    if not isinstance(value, dict):
        raise InvalidRequest("X-Artifact-Metadata must be a JSON object.")
    return value


def _etag_matches(if_none_match: str, etag: str) -> bool:
    candidates = [tag.strip().removeprefix("W/") for tag in if_none_match.split(",")]
    return "*" in candidates or etag in candidates


def _byte_range(header: str, size: int) -> tuple[int, int] | None:
    """(start, end) inclusive for a single satisfiable range; None to ignore the header."""
    match = _RANGE.match(header.strip())
    if match is None or match.groups() == ("", ""):
        return None  # multiple or malformed ranges: RFC 9110 lets us answer 200 with everything
    first, last = match.groups()
    if first == "":
        start, end = max(size - int(last), 0), size - 1
    else:
        start = int(first)
        end = min(int(last), size - 1) if last else size - 1
        if last and int(last) < start:
            return None
    if start >= size or end < start:
        raise RangeNotSatisfiable(
            f"The artifact has {size} bytes.", headers={"Content-Range": f"bytes */{size}"}
        )
    return start, end


async def _download(
    artifacts: ArtifactServiceDep,
    scope: ArtifactScope,
    name: str,
    version: int | None,
    range_header: str | None,
    if_none_match: str | None,
) -> Response:
    content = await artifacts.get(scope, filename=name, version=version)
    meta = content.metadata
    etag = f'"{meta.sha256}"'
    headers = {"ETag": etag, "Accept-Ranges": "bytes", "Cache-Control": "private, no-cache"}
    if if_none_match is not None and _etag_matches(if_none_match, etag):
        return Response(status_code=status.HTTP_304_NOT_MODIFIED, headers=headers)
    if meta.size == 0:  # no byte to range over or to read
        headers["Content-Length"] = "0"
        return Response(b"", headers=headers, media_type=content.media_type)
    byte_range = _byte_range(range_header, meta.size) if range_header else None
    start, end = byte_range or (0, meta.size - 1)
    body = await content.open(start=start, end=end)
    headers["Content-Length"] = str(max(end - start + 1, 0))
    status_code = status.HTTP_200_OK
    if byte_range is not None:
        status_code = status.HTTP_206_PARTIAL_CONTENT
        headers["Content-Range"] = f"bytes {start}-{end}/{meta.size}"
    return StreamingResponse(
        body, status_code=status_code, headers=headers, media_type=content.media_type
    )
