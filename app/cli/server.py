"""The service commands: `serve`, `worker`, `migrate` and `gc`."""

import asyncio
import contextlib
import logging
import os
import shutil
import socket
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import click

from app.cli.common import redact, settings, setup_logging
from app.cli.startup import bind_port, require_migrated
from app.observability.metrics import MULTIPROCESS_DIRECTORY, shared_directory
from app.settings import get_settings

LOOPBACK = {"127.0.0.1", "localhost", "::1"}
#: uvicorn's exit status when the server did not start.
STARTUP_FAILURE = 3

logger = logging.getLogger("agentd")

migrate_option = click.option(
    "--migrate", is_flag=True, help="Apply the database migrations first (as `make run` does)."
)


def _migrate(revision: str = "head") -> None:
    from app.db.migrate import upgrade

    url = settings().resolved_database_url
    upgrade(url, revision)
    logger.info("database at %s migrated", redact(url))


@click.command()
@click.option(
    "--host", default=lambda: os.environ.get("HOST", "127.0.0.1"), show_default="127.0.0.1, $HOST"
)
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=lambda: int(os.environ.get("PORT", "8000")),
    show_default="8000, $PORT",
)
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=None,
    help="Server processes on the port (default: AGENTD_WORKERS, else one per core).",
)
@click.option(
    "--access-log/--no-access-log",
    default=None,
    help="One line per answered request (default: AGENTD_ACCESS_LOG, on).",
)
@migrate_option
def serve(
    host: str, port: int, workers: int | None, access_log: bool | None, migrate: bool
) -> None:
    """Serve the HTTP API with uvicorn.

    The port is bound and the database's schema checked before anything else starts: a busy
    port or an unmigrated database stops it with one line saying what to do.
    """
    if access_log is not None:
        # Through the environment, so every worker process (spawned) reads the same choice.
        os.environ["AGENTD_ACCESS_LOG"] = "true" if access_log else "false"
        get_settings.cache_clear()
    setup_logging("INFO")
    if settings().auth == "none" and host not in LOOPBACK:
        raise click.ClickException(
            f"refusing to serve on {host} with AGENTD_AUTH=none; "
            "set AGENTD_AUTH=api_key or jwt (or bind to 127.0.0.1)."
        )
    sock = bind_port(host, port)
    try:
        if migrate:
            _migrate()
        require_migrated(settings().resolved_database_url, command="serve")
        # uvicorn names no address when handed a socket: say where the API, the console and
        # /docs are.
        base = f"http://{host}:{port}"
        processes = workers or settings().resolved_workers
        logger.info(
            "agentd listening on %s (%d %s): console at %s/console/, API docs at /docs",
            base,
            processes,
            "process" if processes == 1 else "processes",
            base,
        )
        _run_uvicorn(sock, host=host, port=port, workers=processes)
    finally:
        sock.close()


def _run_uvicorn(sock: socket.socket, *, host: str, port: int, workers: int) -> None:
    """What `uvicorn.run` does, on the socket this command bound."""
    import uvicorn
    from uvicorn.supervisors import Multiprocess

    config = uvicorn.Config(
        "app.main:app",
        host=host,
        port=port,
        workers=workers,
        log_config=None,
        # agentd writes its own access line (app/api/middleware.py): uvicorn's stays off.
        access_log=False,
        loop=settings().loop,
    )
    if workers > 1:
        with shared_metrics():
            Multiprocess(config, sockets=[sock]).run()
        return
    server = uvicorn.Server(config)
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:
        pass
    if not server.started:
        sys.exit(STARTUP_FAILURE)


@contextlib.contextmanager
def shared_metrics() -> Iterator[None]:
    """The folder the workers share their metrics in (prometheus-client's multiprocess mode),
    set before they start: PROMETHEUS_MULTIPROC_DIR if the operator set it (emptied: stale
    files would count a previous run), else a fresh one removed at the end."""
    given = shared_directory()
    if given is not None:
        for stale in Path(given).glob("*.db"):
            stale.unlink()
        yield
        return
    directory = tempfile.mkdtemp(prefix="agentd-metrics-")
    os.environ[MULTIPROCESS_DIRECTORY] = directory
    try:
        yield
    finally:
        del os.environ[MULTIPROCESS_DIRECTORY]
        shutil.rmtree(directory, ignore_errors=True)


@click.command(short_help="Run invocations without serving HTTP.")
@migrate_option
def worker(migrate: bool) -> None:
    """Run invocations without serving HTTP (API replicas with AGENTD_RUN_INVOCATIONS=false
    queue them for workers)."""
    setup_logging("INFO")
    if migrate:
        _migrate()
    require_migrated(settings().resolved_database_url, command="worker")
    from app.worker import run_worker

    asyncio.run(run_worker(settings()))


@click.command(short_help="Apply the database migrations.")
@click.argument("revision", default="head")
def migrate(revision: str) -> None:
    """Apply the database migrations up to REVISION (default: the newest)."""
    setup_logging("INFO")
    _migrate(revision)


@click.command()
@click.option(
    "--grace-seconds",
    type=float,
    default=None,
    help="Spare blobs younger than this (default AGENTD_GC_GRACE_SECONDS).",
)
def gc(grace_seconds: float | None) -> None:
    """Delete the blobs that no artifact version references."""
    setup_logging("INFO")
    removed = asyncio.run(_collect_garbage(grace_seconds))
    logger.info("gc removed %d unreferenced blob(s)", len(removed))


async def _collect_garbage(grace_seconds: float | None) -> list[str]:
    from app.artifacts.database import DatabaseArtifactService
    from app.artifacts.factory import create_blob_store
    from app.db.engine import create_db_engine

    current = settings()
    db_engine = create_db_engine(
        current.resolved_database_url, pool_size=1, sqlite_fast_path=current.sqlite_fast_path
    )
    blob_store = create_blob_store(current)
    try:
        service = DatabaseArtifactService(
            db_engine, blob_store, max_artifact_bytes=current.max_artifact_bytes
        )
        grace = current.gc_grace_seconds if grace_seconds is None else grace_seconds
        return await service.collect_garbage(grace_seconds=grace)
    finally:
        await blob_store.aclose()
        await db_engine.dispose()
