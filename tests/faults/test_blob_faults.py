"""Blob store faults against real processes: S3 stopped or never answering, a blob folder that
refuses writes or is full, a fresh data folder with S3 (issue 14, items 6d, 6e and 6f).

Each test runs `agentd serve --migrate` as a child process on SQLite and drives it over HTTP. It
asserts that every request gets an answer, the problem `type`s (503 `blob-store-unavailable` with
Retry-After, 507 `insufficient-storage`), that no server path reaches a client, that the server
recovers without a restart once the fault is gone, and that the database and the blob store agree
afterwards: every artifact version row names a blob the store holds.

S3 is moto's real HTTP server behind `S3Gate` (tests/faults/s3_gate.py), a TCP front that can
refuse connections like a stopped server or hold them without answering.

Making a folder unwritable when the suite runs as root (CI does): root ignores file modes through
its CAP_DAC_OVERRIDE capability, so the server is started through `setpriv` with that capability
(and CAP_DAC_READ_SEARCH) dropped from its bounding set. It stays root and owns its files, but
mode bits bind it like any user, so `chmod a-w` on the blob folder makes the kernel refuse the
server's own writes with EACCES: the real write failure path, not a simulated one. Dropping
capabilities needs only CAP_SETPCAP, which an unprivileged container keeps; as a non-root user no
wrapper is needed.
"""

import hashlib
import os
import resource
import shutil
import sqlite3
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import httpx
import pytest
from moto.server import ThreadedMotoServer

from tests.artifacts.conftest import DUMMY_AWS_ENV, S3_ACCESS_KEY, S3_REGION, S3_SECRET_KEY
from tests.faults.s3_gate import S3Gate
from tests.live_server import LiveServer, build_agents_dir, wait_until
from tests.problems import assert_problem

BUCKET = "agentd-fault-blobs"
SESSIONS = "/apps/capital_agent/users/u1/sessions"
SESSION = f"{SESSIONS}/s1"
ARTIFACTS = f"{SESSION}/artifacts"
COUNTRIES = iter(["France", "Germany", "Italy", "Japan", "Spain", "Canada"] * 10)


def run_body() -> dict[str, Any]:
    """A /run request whose note artifact has bytes no earlier run stored (a new blob)."""
    question = f"What is the capital of {next(COUNTRIES)}?"
    return {
        "appName": "capital_agent",
        "userId": "u1",
        "sessionId": "s1",
        "newMessage": {"role": "user", "parts": [{"text": question}]},
    }


# Root without the capabilities that bypass file modes (see the module docstring).
UNPRIVILEGED = (
    ["setpriv", "--bounding-set=-dac_override,-dac_read_search", "--"] if os.geteuid() == 0 else []
)


@dataclass
class Moto:
    """moto's S3 server in this process, with the bucket the tests use."""

    host: str
    port: int

    def client(self) -> Any:
        """A boto3 client straight to moto (not through the gate)."""
        return boto3.client(
            "s3",
            endpoint_url=f"http://{self.host}:{self.port}",
            region_name=S3_REGION,
            aws_access_key_id=S3_ACCESS_KEY,
            aws_secret_access_key=S3_SECRET_KEY,
        )


@pytest.fixture(scope="module")
def moto() -> Iterator[Moto]:
    """Start moto on a free loopback port with one bucket."""
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        running = Moto(host, port)
        client = running.client()
        client.create_bucket(Bucket=BUCKET)
        client.close()
        yield running
    finally:
        server.stop()


@pytest.fixture
def gate(moto: Moto) -> Iterator[S3Gate]:
    """An open gate to moto for one test."""
    front = S3Gate((moto.host, moto.port))
    front.open()
    try:
        yield front
    finally:
        front.close()


def _limit_file_size(limit: int) -> Callable[[], None]:
    def apply() -> None:  # in the child, before exec; Python ignores SIGXFSZ, so writes fail
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


def start_server(
    workdir: Path, env: dict[str, str], *, file_size_limit: int | None = None
) -> LiveServer:
    """`agentd serve --migrate` on SQLite in `workdir`, unable to bypass file modes (and, with
    `file_size_limit`, unable to write a file past that many bytes)."""
    server = LiveServer(workdir, {"AGENTD_DATA_DIR": str(workdir / "data"), **env})
    workdir.mkdir(parents=True, exist_ok=True)
    agents = build_agents_dir(workdir / "agents")
    command = [sys.executable, "-m", "app", "serve", "--migrate", "--port", str(server.port)]
    with server.log.open("ab") as log:
        server.process = subprocess.Popen(
            [*UNPRIVILEGED, *command],
            cwd=workdir,
            env={**os.environ, "AGENTD_AGENTS_DIR": str(agents), **server.env},
            stdout=log,
            stderr=subprocess.STDOUT,
            preexec_fn=None if file_size_limit is None else _limit_file_size(file_size_limit),
        )

    def healthy() -> bool:
        assert server.process is not None
        if server.process.poll() is not None:
            raise RuntimeError(f"server exited:\n{server.log.read_text()}")
        try:
            return httpx.get(f"{server.url}/health", timeout=1).status_code == 200
        except httpx.TransportError:
            return False

    wait_until(healthy, timeout=60)
    return server


@pytest.fixture
def servers() -> Iterator[list[LiveServer]]:
    """Servers a test started, stopped at its end."""
    started: list[LiveServer] = []
    yield started
    for server in started:
        server.stop()


def s3_env(gate: S3Gate) -> dict[str, str]:
    """Settings for the S3 store behind `gate`, with short timeouts and a prefix of its own."""
    return {
        **DUMMY_AWS_ENV,
        "AGENTD_BLOB_STORE": "s3",
        "AGENTD_S3_BUCKET": BUCKET,
        "AGENTD_S3_PREFIX": f"faults-{uuid.uuid4().hex}",
        "AGENTD_S3_ENDPOINT_URL": gate.url,
        "AGENTD_S3_REGION": S3_REGION,
        "AGENTD_S3_FORCE_PATH_STYLE": "true",
        "AGENTD_S3_CONNECT_TIMEOUT_SECONDS": "0.5",
        "AGENTD_S3_READ_TIMEOUT_SECONDS": "0.5",
        "AGENTD_S3_MAX_ATTEMPTS": "2",
    }


# -- requests ---------------------------------------------------------------------------------


def upload(http: httpx.Client, data: bytes, name: str = "doc.bin") -> httpx.Response:
    """PUT a new version of an artifact as a raw body."""
    return http.put(
        f"{ARTIFACTS}/{name}/content",
        content=data,
        headers={"content-type": "application/octet-stream"},
    )


def assert_unavailable(response: httpx.Response, *hidden: str) -> None:
    """503 blob-store-unavailable with Retry-After, naming none of `hidden` (server paths)."""
    assert_problem(response, 503, "blob-store-unavailable")
    assert int(response.headers["retry-after"]) > 0
    for text in hidden:
        assert text not in response.text


def assert_run_refused(response: httpx.Response, *hidden: str) -> None:
    """/run answers the run's recorded problem: 503 blob-store-unavailable, no server paths.

    No Retry-After here: /run re-raises the invocation's stored problem body, which keeps no
    headers (app/api/runs.py, StoredProblem).
    """
    assert_problem(response, 503, "blob-store-unavailable")
    for text in hidden:
        assert text not in response.text


def assert_run_saves_its_artifact(http: httpx.Client) -> None:
    """/run answers 200 and its events carry the artifact the app's callback saved."""
    response = http.post("/run", json=run_body())
    assert response.status_code == 200, response.text
    assert any(event["actions"].get("artifactDelta") for event in response.json())


def wait_ready(http: httpx.Client) -> None:
    """Poll /readyz until it answers 200."""
    wait_until(lambda: http.get("/readyz").status_code == 200, timeout=30)


def version_rows(workdir: Path) -> list[tuple[str, int, str, str]]:
    """(name, version, sha256, blob key) of every artifact version row in the server's SQLite."""
    with sqlite3.connect(workdir / "data" / "agentd.db") as db:
        rows = db.execute("SELECT name, version, sha256, blob_key FROM artifact_versions")
        return [(str(n), int(v), str(s), str(k)) for n, v, s, k in rows]


def assert_versions_readable(http: httpx.Client, workdir: Path) -> None:
    """Every version row's bytes download with the sha256 the row records."""
    rows = version_rows(workdir)
    assert rows
    for name, version, sha256, _ in rows:
        response = http.get(f"{ARTIFACTS}/{name}/versions/{version}/content")
        assert response.status_code == 200, (name, version, response.text)
        assert hashlib.sha256(response.content).hexdigest() == sha256


# -- 6d: S3 on a fresh data folder -----------------------------------------------------------


def test_s3_store_on_a_fresh_data_folder_stores_uploads_and_readyz_probes_the_spool(
    tmp_path: Path, gate: S3Gate, moto: Moto, servers: list[LiveServer]
) -> None:
    env = s3_env(gate)
    servers.append(server := start_server(tmp_path, env))
    spool = tmp_path / "data" / "spool"
    with httpx.Client(base_url=server.url, timeout=30) as http:
        assert http.get("/health").json() == {"status": "ok", "blobStore": "s3"}
        assert http.get("/readyz").status_code == 200
        assert spool.is_dir()  # created at startup: the data folder was empty
        assert http.post(SESSIONS, json={"sessionId": "s1"}).status_code == 201
        assert upload(http, b"first").status_code == 201
        assert_run_saves_its_artifact(http)

        # A spool folder the server cannot write: not ready, and uploads are refused with 503.
        spool.chmod(0o555)
        assert_unavailable(http.get("/readyz"), str(spool))
        assert_unavailable(upload(http, b"refused"), str(spool))
        assert_run_refused(http.post("/run", json=run_body()), str(spool))
        spool.chmod(0o755)
        assert http.get("/readyz").status_code == 200
        assert upload(http, b"second").status_code == 201

        # A spool folder removed under the running server is made again.
        shutil.rmtree(spool)
        assert upload(http, b"third").status_code == 201
        assert http.get("/readyz").status_code == 200

        assert http.get(f"{ARTIFACTS}/doc.bin/versions").json() == [0, 1, 2]
        assert_versions_readable(http, tmp_path)
    assert_s3_holds_every_version(tmp_path, moto, env["AGENTD_S3_PREFIX"])


def test_docker_image_gives_the_service_its_blob_folder_and_upload_spool() -> None:
    dockerfile = (Path(__file__).resolve().parents[2] / "Dockerfile").read_text()
    runs = [" ".join(step.split()) for step in dockerfile.replace("\\\n", " ").split("\nRUN ")]
    prepared = [step for step in runs if "/app/data/spool" in step]
    assert prepared, "the runtime image must create /app/data/spool"
    assert "/app/data/blobs" in prepared[-1]
    assert "chown -R agentd:agentd /app/data" in prepared[-1]


def assert_s3_holds_every_version(workdir: Path, moto: Moto, prefix: str) -> None:
    """Every version row's blob is an object in the bucket (read straight from moto)."""
    client = moto.client()
    try:
        for _, _, _, key in version_rows(workdir):
            client.head_object(Bucket=BUCKET, Key=f"{prefix}/{key}")
    finally:
        client.close()


# -- 6e: S3 stopped, S3 that never answers ------------------------------------------------------


def test_s3_stopped_or_never_answering_gets_503_with_retry_after_then_recovers_without_restart(
    tmp_path: Path, gate: S3Gate, moto: Moto, servers: list[LiveServer]
) -> None:
    env = s3_env(gate)
    servers.append(server := start_server(tmp_path, env))
    # The client's timeout is far above the server's S3 timeouts: a hang would fail the test.
    with httpx.Client(base_url=server.url, timeout=60) as http:
        assert http.post(SESSIONS, json={"sessionId": "s1"}).status_code == 201
        assert upload(http, b"before the faults").status_code == 201

        for fault in (gate.close, gate.stall):  # S3 stopped; S3 accepting but never answering
            fault()
            assert_unavailable(http.get("/readyz"), gate.url)
            assert_unavailable(upload(http, b"during a fault"), gate.url)
            assert_unavailable(http.get(f"{ARTIFACTS}/doc.bin/content"), gate.url)
            assert_run_refused(http.post("/run", json=run_body()), gate.url)
            # What lives in the database alone still answers.
            assert http.get(f"{ARTIFACTS}/doc.bin/versions").status_code == 200

            gate.open()
            wait_ready(http)
            first = http.get(f"{ARTIFACTS}/doc.bin/versions/0/content")
            assert first.content == b"before the faults"
            assert upload(http, f"after {fault.__name__}".encode()).status_code == 201
            assert_run_saves_its_artifact(http)

        # The refused uploads and failed runs left no version behind.
        assert http.get(f"{ARTIFACTS}/doc.bin/versions").json() == [0, 1, 2]
        assert_versions_readable(http, tmp_path)
    assert_s3_holds_every_version(tmp_path, moto, env["AGENTD_S3_PREFIX"])


# -- 6f: a blob folder that refuses writes, or is full ----------------------------------------


def set_writable(root: Path, writable: bool) -> None:
    """chmod every folder under `root` (and `root`) so that nobody, or its owner, may write."""
    mode = 0o755 if writable else 0o555
    for folder, _, _ in os.walk(root):
        Path(folder).chmod(mode)


def assert_local_store_holds_every_version(workdir: Path, blobs: Path) -> None:
    """Every version row's blob is a file in the folder, and no upload left a temp file."""
    for _, _, sha256, key in version_rows(workdir):
        blob = blobs / key
        assert hashlib.sha256(blob.read_bytes()).hexdigest() == sha256
    assert list((blobs / "tmp").iterdir()) == []


def test_read_only_blob_folder_answers_503_without_paths_and_recovers(
    tmp_path: Path, servers: list[LiveServer]
) -> None:
    blobs = tmp_path / "data" / "blobs"
    servers.append(server := start_server(tmp_path, {}))
    with httpx.Client(base_url=server.url, timeout=30) as http:
        assert http.get("/health").json() == {"status": "ok", "blobStore": "local"}
        assert http.post(SESSIONS, json={"sessionId": "s1"}).status_code == 201
        assert upload(http, b"before").status_code == 201
        assert_run_saves_its_artifact(http)

        set_writable(blobs, False)
        try:
            assert_unavailable(upload(http, b"refused"), str(tmp_path))
            assert_run_refused(http.post("/run", json=run_body()), str(tmp_path))
            assert_unavailable(http.get("/readyz"), str(tmp_path))
            # Reading what is stored needs no write.
            assert http.get(f"{ARTIFACTS}/doc.bin/content").content == b"before"
        finally:
            set_writable(blobs, True)

        wait_ready(http)
        assert upload(http, b"after").status_code == 201
        assert_run_saves_its_artifact(http)
        assert http.get(f"{ARTIFACTS}/doc.bin/versions").json() == [0, 1]
        assert_versions_readable(http, tmp_path)
    assert_local_store_holds_every_version(tmp_path, blobs)


def test_full_blob_folder_answers_507_and_takes_uploads_again_once_there_is_room(
    tmp_path: Path, servers: list[LiveServer]
) -> None:
    """The server runs with a 1 MiB file-size limit (RLIMIT_FSIZE): the kernel refuses the write
    past it with EFBIG, a storage limit as real as a full disk (ENOSPC, tested with /dev/full in
    tests/artifacts/test_blob_store_failures.py) and mapped alike, and unlike a tmpfs it needs
    no mount privilege, so the test runs everywhere."""
    workdir = tmp_path / "server"
    blobs = workdir / "blobs"
    servers.append(
        server := start_server(
            workdir, {"AGENTD_BLOB_DIR": str(blobs)}, file_size_limit=1024 * 1024
        )
    )
    with httpx.Client(base_url=server.url, timeout=30) as http:
        assert http.post(SESSIONS, json={"sessionId": "s1"}).status_code == 201
        assert upload(http, b"small").status_code == 201

        too_big = upload(http, os.urandom(2 * 1024 * 1024))
        assert_problem(too_big, 507, "insufficient-storage")
        assert str(blobs) not in too_big.text

        # The failed upload's temp file is gone, so its room is free again.
        assert upload(http, b"fits").status_code == 201
        assert http.get("/readyz").status_code == 200
        assert http.get(f"{ARTIFACTS}/doc.bin/versions").json() == [0, 1]
        assert_versions_readable(http, workdir)
    assert_local_store_holds_every_version(workdir, blobs)
