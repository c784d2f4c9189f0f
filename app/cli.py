"""The `agentd` console script: `serve`, `migrate` and `gc`."""

import argparse
import asyncio
import logging
import os

from app.settings import get_settings


def main(argv: list[str] | None = None) -> None:
    """Entry point of the `agentd` command."""
    parser = argparse.ArgumentParser(prog="agentd", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="serve the HTTP API with uvicorn")
    serve.add_argument("--host", default=os.environ.get("HOST", "127.0.0.1"))
    serve.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
    serve.add_argument("--workers", type=int, default=1)
    serve.add_argument("--migrate", action="store_true", help="apply migrations first")
    migrate = commands.add_parser("migrate", help="apply database migrations")
    migrate.add_argument("revision", nargs="?", default="head")
    gc = commands.add_parser("gc", help="delete blobs that no artifact version references")
    gc.add_argument(
        "--grace-seconds",
        type=float,
        default=None,
        help="spare blobs younger than this (default AGENTD_GC_GRACE_SECONDS)",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")

    if args.command == "migrate" or (args.command == "serve" and args.migrate):
        from app.db.migrate import upgrade

        url = get_settings().resolved_database_url
        upgrade(url, getattr(args, "revision", "head"))
        logging.getLogger("agentd").info("database at %s migrated", _redact(url))
    if args.command == "gc":
        removed = asyncio.run(_collect_garbage(args.grace_seconds))
        logging.getLogger("agentd").info("gc removed %d unreferenced blob(s)", len(removed))
    if args.command == "serve":
        import uvicorn

        uvicorn.run("app.main:app", host=args.host, port=args.port, workers=args.workers)


async def _collect_garbage(grace_seconds: float | None) -> list[str]:
    from app.artifacts.factory import create_blob_store
    from app.artifacts.service import ArtifactService
    from app.db.engine import create_db_engine

    settings = get_settings()
    db_engine = create_db_engine(settings.resolved_database_url, pool_size=1)
    blob_store = create_blob_store(settings)
    try:
        service = ArtifactService(
            db_engine, blob_store, max_artifact_bytes=settings.max_artifact_bytes
        )
        grace = settings.gc_grace_seconds if grace_seconds is None else grace_seconds
        return await service.collect_garbage(grace_seconds=grace)
    finally:
        await blob_store.aclose()
        await db_engine.dispose()


def _redact(url: str) -> str:
    from sqlalchemy.engine import make_url

    return make_url(url).render_as_string(hide_password=True)
