"""Fixtures for the artifact tests: every ArtifactService and every `BlobStore` backend.

The artifact services come in memory and on every database backend (with a local blob folder),
each paired with the session service that commits its versions. The S3 blob store runs against
moto's real HTTP server (not its in-process mocks), started once per test session on 127.0.0.1
with dummy credentials, so the store's requests, paging, range reads and multipart uploads go over
the wire as they would against a real S3-compatible service.
"""

import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import boto3
import pytest
import pytest_asyncio
from moto.server import ThreadedMotoServer
from sqlalchemy.ext.asyncio import AsyncEngine

from app.artifacts.base import BaseArtifactService
from app.artifacts.blobstore import BlobStore, InMemoryBlobStore, LocalBlobStore, S3BlobStore
from app.artifacts.database import DatabaseArtifactService
from app.artifacts.file import FileArtifactService
from app.artifacts.in_memory import InMemoryArtifactService
from app.sessions.base import BaseSessionService
from app.sessions.database import DatabaseSessionService
from app.sessions.in_memory import InMemorySessionService
from tests.conftest import DB_BACKENDS, engine_for

S3_REGION = "us-east-1"
S3_ACCESS_KEY = "testing"
S3_SECRET_KEY = "testing"
MiB = 1024 * 1024
MAX_ARTIFACT_BYTES = 1024 * 1024

# Keeps boto3 away from real profiles, instance metadata and proxies while the server runs.
DUMMY_AWS_ENV = {
    "AWS_ACCESS_KEY_ID": S3_ACCESS_KEY,
    "AWS_SECRET_ACCESS_KEY": S3_SECRET_KEY,
    "AWS_DEFAULT_REGION": S3_REGION,
    "AWS_CONFIG_FILE": "/nonexistent/agentd-tests/aws-config",
    "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent/agentd-tests/aws-credentials",
    "AWS_EC2_METADATA_DISABLED": "true",
    "NO_PROXY": "127.0.0.1,localhost",
    "no_proxy": "127.0.0.1,localhost",
}


@dataclass(frozen=True, slots=True)
class S3Server:
    """A running S3-compatible server and the bucket the tests use."""

    endpoint_url: str
    bucket: str

    def store(self, *, prefix: str, spool_dir: Path, bucket: str | None = None) -> S3BlobStore:
        """Return a store on this server; the small multipart sizes make uploads go multipart."""
        return S3BlobStore(
            bucket or self.bucket,
            prefix=prefix,
            endpoint_url=self.endpoint_url,
            region=S3_REGION,
            access_key_id=S3_ACCESS_KEY,
            secret_access_key=S3_SECRET_KEY,
            force_path_style=True,
            multipart_threshold=5 * MiB,
            multipart_chunksize=5 * MiB,
            spool_dir=spool_dir,
        )


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    """Start moto's S3 server on a free loopback port with one bucket; fail if it cannot start."""
    with pytest.MonkeyPatch.context() as patch:
        for name, value in DUMMY_AWS_ENV.items():
            patch.setenv(name, value)
        patch.delenv("AWS_PROFILE", raising=False)
        server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        server.start()
        try:
            host, port = server.get_host_and_port()
            endpoint_url = f"http://{host}:{port}"
            bucket = "agentd-test-blobs"
            client = boto3.client(
                "s3",
                endpoint_url=endpoint_url,
                region_name=S3_REGION,
                aws_access_key_id=S3_ACCESS_KEY,
                aws_secret_access_key=S3_SECRET_KEY,
            )
            client.create_bucket(Bucket=bucket)
            client.close()
            yield S3Server(endpoint_url=endpoint_url, bucket=bucket)
        finally:
            server.stop()


@pytest_asyncio.fixture(params=["memory", "local", "s3"])
async def blob_store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[BlobStore]:
    """Yield an empty store of each backend; S3 stores get a fresh prefix in the shared bucket."""
    store: BlobStore
    if request.param == "memory":
        store = InMemoryBlobStore()
    elif request.param == "local":
        store = LocalBlobStore(tmp_path / "blobs")
    else:
        server: S3Server = request.getfixturevalue("s3_server")
        store = server.store(prefix=f"test-{uuid.uuid4().hex}", spool_dir=tmp_path)
    try:
        yield store
    finally:
        await store.aclose()


#: FileArtifactService over the in-memory session store and over a database (SQLite).
FILE_BACKENDS = ["file-memory", "file-sqlite"]


@pytest.fixture(params=["memory", *DB_BACKENDS, *FILE_BACKENDS])
async def services(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[tuple[BaseSessionService, BaseArtifactService]]:
    """Every ArtifactService implementation with its session service, on an empty store."""
    if request.param == "file-memory":
        file_sessions = InMemorySessionService()
        yield (
            file_sessions,
            FileArtifactService(
                tmp_path / "artifacts",
                session_service=file_sessions,
                max_artifact_bytes=MAX_ARTIFACT_BYTES,
            ),
        )
        return
    if request.param == "file-sqlite":
        file_engine = engine_for(request, "sqlite", tmp_path)
        db_sessions = DatabaseSessionService(file_engine)
        try:
            yield (
                db_sessions,
                FileArtifactService(
                    tmp_path / "artifacts",
                    session_service=db_sessions,
                    max_artifact_bytes=MAX_ARTIFACT_BYTES,
                ),
            )
        finally:
            await file_engine.dispose()
        return
    if request.param == "memory":
        memory_sessions = InMemorySessionService()
        yield (
            memory_sessions,
            InMemoryArtifactService(
                session_service=memory_sessions, max_artifact_bytes=MAX_ARTIFACT_BYTES
            ),
        )
        return
    engine = engine_for(request, request.param, tmp_path)
    blobs = LocalBlobStore(tmp_path / "blobs")
    sessions = DatabaseSessionService(engine)
    try:
        yield (
            sessions,
            DatabaseArtifactService(
                engine, blobs, max_artifact_bytes=MAX_ARTIFACT_BYTES, session_service=sessions
            ),
        )
    finally:
        await blobs.aclose()
        await engine.dispose()


@pytest.fixture
async def db_services(
    db_engine: AsyncEngine, tmp_path: Path
) -> AsyncIterator[tuple[DatabaseSessionService, DatabaseArtifactService]]:
    """The database services on one database and a local blob folder (blob gc is theirs)."""
    blobs = LocalBlobStore(tmp_path / "blobs")
    sessions = DatabaseSessionService(db_engine)
    yield (
        sessions,
        DatabaseArtifactService(
            db_engine, blobs, max_artifact_bytes=MAX_ARTIFACT_BYTES, session_service=sessions
        ),
    )
    await blobs.aclose()
