"""HTTP behaviour of the artifact routes, on SQLite and PostgreSQL with a local blob folder."""

import base64
import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from app.settings import Settings
from tests.problems import assert_problem

SESSION = "/apps/capital_agent/users/u1/sessions/s1"
ARTIFACTS = f"{SESSION}/artifacts"
LIMIT = 256 * 1024


@pytest.fixture
def client(api_settings: Settings) -> Iterator[TestClient]:
    """An app with a small artifact limit and one session `s1`."""
    settings = api_settings.model_copy(update={"max_artifact_bytes": LIMIT})
    with TestClient(create_app(settings)) as test_client:
        assert (
            test_client.post(SESSION.rsplit("/", 1)[0], json={"sessionId": "s1"}).status_code == 201
        )
        yield test_client


def _blob_files(settings: Settings) -> list[Path]:
    root = settings.resolved_blob_dir / "sha256"
    return [p for p in root.rglob("*") if p.is_file()] if root.exists() else []


def test_upload_json_part_then_load_it_back(client: TestClient) -> None:
    data = b"\x00\x01binary\xff"
    body = {
        "filename": "img/pixel.bin",
        "artifact": {
            "inlineData": {"mimeType": "image/png", "data": base64.b64encode(data).decode()}
        },
        "customMetadata": {"source": "test"},
    }
    saved = client.post(ARTIFACTS, json=body)
    assert saved.status_code == 201, saved.text
    meta = saved.json()
    assert meta["version"] == 0
    assert meta["mimeType"] == "image/png"
    assert meta["size"] == len(data)
    assert meta["sha256"] == hashlib.sha256(data).hexdigest()
    assert meta["customMetadata"] == {"source": "test"}
    assert meta["canonicalUri"].endswith("/sessions/s1/artifacts/img/pixel.bin/versions/0")

    text = client.post(ARTIFACTS, json={"filename": "img/pixel.bin", "artifact": {"text": "hi"}})
    assert text.json()["version"] == 1
    assert client.get(f"{ARTIFACTS}/img/pixel.bin").json() == {"text": "hi"}  # as ADK reads it
    first = client.get(f"{ARTIFACTS}/img/pixel.bin", params={"version": 0}).json()
    assert base64.urlsafe_b64decode(first["inlineData"]["data"]) == data
    assert client.get(f"{ARTIFACTS}/img/pixel.bin/versions/0").json() == first
    assert client.get(f"{ARTIFACTS}/img/pixel.bin/versions").json() == [0, 1]
    metas = client.get(f"{ARTIFACTS}/img/pixel.bin/versions/metadata").json()
    assert [m["version"] for m in metas] == [0, 1]
    assert client.get(f"{ARTIFACTS}/img/pixel.bin/versions/1/metadata").json()["size"] == 2
    assert client.get(ARTIFACTS).json() == ["img/pixel.bin"]

    # Every REST write is a user event carrying the artifactDelta.
    events = client.get(f"{SESSION}/events").json()["events"]
    assert [e["actions"]["artifactDelta"] for e in events] == [
        {"img/pixel.bin": 0},
        {"img/pixel.bin": 1},
    ]


def test_raw_upload_and_download_with_headers_etag_and_range(client: TestClient) -> None:
    data = bytes(range(256)) * 40
    put = client.put(
        f"{ARTIFACTS}/report.pdf/content",
        content=data,
        headers={"content-type": "application/pdf", "x-artifact-metadata": '{"pages": 3}'},
    )
    assert put.status_code == 201, put.text
    assert put.json()["customMetadata"] == {"pages": 3}
    etag = f'"{hashlib.sha256(data).hexdigest()}"'

    got = client.get(f"{ARTIFACTS}/report.pdf/content")
    assert got.status_code == 200
    assert got.content == data
    assert got.headers["content-type"] == "application/pdf"
    assert got.headers["content-length"] == str(len(data))
    assert got.headers["etag"] == etag
    assert got.headers["accept-ranges"] == "bytes"

    not_modified = client.get(f"{ARTIFACTS}/report.pdf/content", headers={"if-none-match": etag})
    assert not_modified.status_code == 304
    assert not_modified.content == b""

    part = client.get(f"{ARTIFACTS}/report.pdf/content", headers={"range": "bytes=10-19"})
    assert part.status_code == 206
    assert part.content == data[10:20]
    assert part.headers["content-range"] == f"bytes 10-19/{len(data)}"
    assert part.headers["content-length"] == "10"
    suffix = client.get(f"{ARTIFACTS}/report.pdf/versions/0/content", headers={"range": "bytes=-5"})
    assert suffix.status_code == 206
    assert suffix.content == data[-5:]
    open_ended = client.get(f"{ARTIFACTS}/report.pdf/content", headers={"range": "bytes=10200-"})
    assert open_ended.content == data[10200:]
    beyond = client.get(f"{ARTIFACTS}/report.pdf/content", headers={"range": "bytes=99999-"})
    assert_problem(beyond, 416, "range-not-satisfiable")
    assert beyond.headers["content-range"] == f"bytes */{len(data)}"


def test_multipart_upload_stores_the_file_field(client: TestClient) -> None:
    files = {"file": ("notes.txt", b"multi part", "text/markdown")}
    response = client.put(f"{ARTIFACTS}/notes.md/content", files=files)
    assert response.status_code == 201, response.text
    assert response.json()["mimeType"] == "text/markdown"
    assert client.get(f"{ARTIFACTS}/notes.md/content").content == b"multi part"


def test_upload_over_the_limit_is_413_and_stores_nothing(
    client: TestClient, api_settings: Settings
) -> None:
    too_big = b"x" * (LIMIT + 1)
    assert_problem(
        client.put(f"{ARTIFACTS}/big.bin/content", content=too_big), 413, "artifact-too-large"
    )

    def chunked() -> Iterator[bytes]:
        for _ in range(LIMIT // 1024 + 1):
            yield b"y" * 1024

    assert_problem(
        client.put(f"{ARTIFACTS}/big.bin/content", content=chunked()), 413, "artifact-too-large"
    )
    assert client.get(ARTIFACTS).json() == []
    assert_problem(client.get(f"{ARTIFACTS}/big.bin/content"), 404, "artifact-not-found")
    assert _blob_files(api_settings) == []
    assert client.get(f"{SESSION}/events").json()["events"] == []


def test_missing_name_or_version_is_404(client: TestClient) -> None:
    client.put(f"{ARTIFACTS}/a.txt/content", content=b"a")
    for path in [
        f"{ARTIFACTS}/nope.txt",
        f"{ARTIFACTS}/nope.txt/content",
        f"{ARTIFACTS}/nope.txt/versions",
        f"{ARTIFACTS}/nope.txt/versions/metadata",
        f"{ARTIFACTS}/a.txt/versions/7",
        f"{ARTIFACTS}/a.txt/versions/7/metadata",
        f"{ARTIFACTS}/a.txt/versions/7/content",
    ]:
        assert_problem(client.get(path), 404, "artifact-not-found")
    assert_problem(client.delete(f"{ARTIFACTS}/nope.txt"), 404, "artifact-not-found")
    missing_session = "/apps/capital_agent/users/u1/sessions/none/artifacts"
    assert_problem(client.get(missing_session), 404, "session-not-found")
    assert_problem(
        client.put(f"{missing_session}/a.txt/content", content=b"a"), 404, "session-not-found"
    )


@pytest.mark.parametrize(
    "name", ["%2E%2E/secret", "a/%2E%2E/b", "a%00b", "a%0Ab", "x" * 600, "a/versions/b"]
)
def test_traversal_and_control_names_are_rejected(client: TestClient, name: str) -> None:
    response = client.put(f"{ARTIFACTS}/{name}/content", content=b"x")
    assert response.status_code in (404, 422), response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    body = client.post(ARTIFACTS, json={"filename": "../../etc/passwd", "artifact": {"text": "x"}})
    assert_problem(body, 422, "invalid-artifact-name")
    assert client.get(ARTIFACTS).json() == []


def test_invalid_part_and_metadata_are_422(client: TestClient) -> None:
    assert_problem(
        client.post(ARTIFACTS, json={"filename": "a", "artifact": {}}), 422, "invalid-artifact"
    )
    assert_problem(
        client.put(f"{ARTIFACTS}/a/content", content=b"x", headers={"x-artifact-metadata": "[1]"}),
        422,
        "invalid-request",
    )


def test_deleting_an_artifact_or_its_session_removes_it(client: TestClient) -> None:
    client.put(f"{ARTIFACTS}/a.txt/content", content=b"a")
    client.put(f"{ARTIFACTS}/b.txt/content", content=b"b")
    client.put(f"{ARTIFACTS}/user:profile.txt/content", content=b"p")
    assert client.delete(f"{ARTIFACTS}/a.txt").status_code == 200
    assert client.get(ARTIFACTS).json() == ["b.txt", "user:profile.txt"]
    assert client.delete(SESSION).status_code == 200
    client.post(SESSION.rsplit("/", 1)[0], json={"sessionId": "s1"})
    # The re-created session starts without the old session's artifacts; the user's remain.
    assert client.get(ARTIFACTS).json() == ["user:profile.txt"]
    assert_problem(client.get(f"{ARTIFACTS}/b.txt/content"), 404, "artifact-not-found")
