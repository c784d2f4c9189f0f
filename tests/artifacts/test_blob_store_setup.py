"""The blob store a process builds from its settings: folders made at startup, the warning for
blobs that other replicas cannot see, and `/health` naming the backend (issue 14, items 5, 6d)."""

import logging
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from app.artifacts.blobstore import InMemoryBlobStore, LocalBlobStore, S3BlobStore
from app.artifacts.factory import create_blob_store
from app.main import create_app
from app.settings import Settings
from tests.conftest import fresh_pg_url, fresh_sqlite_url
from tests.live_server import LiveServer, build_agents_dir
from tests.pgserver import PostgresServer

PG_URL = "postgresql+asyncpg://agentd@db.example:5432/agentd"
REPLICAS_WARNING = "replica"


def settings(tmp_path: Path, **values: object) -> Settings:
    """Settings on a data folder that does not exist yet."""
    return Settings(data_dir=tmp_path / "data", **values)  # type: ignore[arg-type]


async def test_local_store_creates_its_folders_at_startup(tmp_path: Path) -> None:
    store = create_blob_store(settings(tmp_path))
    assert isinstance(store, LocalBlobStore)
    assert (tmp_path / "data" / "blobs" / "tmp").is_dir()
    assert (tmp_path / "data" / "blobs" / "sha256").is_dir()
    await store.ping()


async def test_s3_store_creates_its_upload_spool_at_startup(tmp_path: Path) -> None:
    store = create_blob_store(settings(tmp_path, blob_store="s3", s3_bucket="b"))
    assert isinstance(store, S3BlobStore)
    assert (tmp_path / "data" / "spool").is_dir()
    await store.aclose()


async def test_a_blob_folder_that_cannot_be_made_is_a_warning_not_a_crash(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    with caplog.at_level(logging.WARNING, logger="agentd.artifacts"):
        store = create_blob_store(settings(tmp_path, blob_dir=blocker / "blobs"))
    assert "could not be created" in caplog.text
    assert isinstance(store, LocalBlobStore)


@pytest.mark.parametrize(
    ("database_url", "blob_store", "warned"),
    [
        (PG_URL, "local", True),
        (PG_URL, "memory", True),
        (PG_URL, "s3", False),
        ("", "local", False),  # SQLite: one process by construction
        ("sqlite+aiosqlite:///x.db", "memory", False),
    ],
)
def test_startup_warns_when_postgres_replicas_would_not_share_blobs(
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    database_url: str,
    blob_store: str,
    warned: bool,
) -> None:
    with caplog.at_level(logging.WARNING, logger="agentd.artifacts"):
        create_blob_store(
            settings(tmp_path, database_url=database_url, blob_store=blob_store, s3_bucket="b")
        )
    assert (REPLICAS_WARNING in caplog.text) is warned
    assert "AGENTD_BLOB_STORE=s3" in caplog.text or not warned


def test_memory_store_needs_no_folders(tmp_path: Path) -> None:
    assert isinstance(create_blob_store(settings(tmp_path, blob_store="memory")), InMemoryBlobStore)
    assert not (tmp_path / "data").exists()


@pytest.fixture
def pg_server(
    request: pytest.FixtureRequest, tmp_path: Path, postgres: PostgresServer, pg_template: str
) -> Iterator[LiveServer]:
    """`agentd serve` on a fresh PostgreSQL database with the blob store `request.param`."""
    server = LiveServer(
        tmp_path,
        {
            "AGENTD_DATABASE_URL": fresh_pg_url(postgres, pg_template),
            "AGENTD_DATA_DIR": str(tmp_path / "data"),
            "AGENTD_AGENTS_DIR": str(build_agents_dir(tmp_path / "agents")),
            "AGENTD_BLOB_STORE": request.param,
        },
    ).start()
    yield server
    server.stop()


@pytest.mark.parametrize("pg_server", ["local"], indirect=True)
def test_postgres_with_a_local_blob_folder_warns_and_health_names_the_backend(
    pg_server: LiveServer,
) -> None:
    health = httpx.get(f"{pg_server.url}/health", timeout=10)
    assert health.status_code == 200
    assert health.json() == {"status": "ok", "blobStore": "local"}
    log = pg_server.log.read_text()
    assert "AGENTD_BLOB_STORE=local with a PostgreSQL database" in log
    assert "shared volume" in log
    assert "AGENTD_BLOB_STORE=s3" in log


def test_health_names_the_memory_store(tmp_path: Path, sqlite_template: Path) -> None:
    app = create_app(
        Settings(
            database_url=fresh_sqlite_url(sqlite_template, tmp_path),
            data_dir=tmp_path / "data",
            blob_store="memory",
        )
    )
    with TestClient(app) as client:
        assert client.get("/health").json() == {"status": "ok", "blobStore": "memory"}
