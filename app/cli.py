"""The `agentd` console script: `serve`, `worker`, `migrate`, `gc` and `keys`."""

import argparse
import asyncio
import logging
import os
import sys

from app.observability.logging import configure_logging
from app.settings import get_settings

LOOPBACK = {"127.0.0.1", "localhost", "::1"}


def main(argv: list[str] | None = None) -> None:
    """Entry point of the `agentd` command."""
    parser = argparse.ArgumentParser(prog="agentd", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="serve the HTTP API with uvicorn")
    serve.add_argument("--host", default=os.environ.get("HOST", "127.0.0.1"))
    serve.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
    serve.add_argument("--workers", type=int, default=1)
    serve.add_argument("--migrate", action="store_true", help="apply migrations first")
    worker = commands.add_parser("worker", help="run invocations without serving HTTP")
    worker.add_argument("--migrate", action="store_true", help="apply migrations first")
    migrate = commands.add_parser("migrate", help="apply database migrations")
    migrate.add_argument("revision", nargs="?", default="head")
    gc = commands.add_parser("gc", help="delete blobs that no artifact version references")
    gc.add_argument(
        "--grace-seconds",
        type=float,
        default=None,
        help="spare blobs younger than this (default AGENTD_GC_GRACE_SECONDS)",
    )
    keys = commands.add_parser("keys", help="manage API keys (AGENTD_AUTH=api_key)")
    key_commands = keys.add_subparsers(dest="keys_command", required=True)
    create = key_commands.add_parser("create", help="create a key and print it (shown once)")
    create.add_argument("--name", default="")
    create.add_argument("--app", action="append", dest="apps", help="allowed app (repeatable)")
    create.add_argument("--user", default=None, help="bind the key to one user id")
    create.add_argument("--admin", action="store_true", help="may write app: state, read metrics")
    key_commands.add_parser("list", help="list keys (never their secrets)")
    revoke = key_commands.add_parser("revoke", help="revoke a key at once")
    revoke.add_argument("key_id")
    args = parser.parse_args(argv)
    configure_logging(
        os.environ.get("AGENTD_LOG_LEVEL", "INFO"),
        json_format=os.environ.get("AGENTD_LOG_FORMAT", "json") != "text",
    )

    if args.command == "migrate" or (args.command in ("serve", "worker") and args.migrate):
        from app.db.migrate import upgrade

        url = get_settings().resolved_database_url
        upgrade(url, getattr(args, "revision", "head"))
        logging.getLogger("agentd").info("database at %s migrated", _redact(url))
    if args.command == "gc":
        removed = asyncio.run(_collect_garbage(args.grace_seconds))
        logging.getLogger("agentd").info("gc removed %d unreferenced blob(s)", len(removed))
    if args.command == "keys":
        asyncio.run(_keys(args))
    if args.command == "worker":
        from app.worker import run_worker

        asyncio.run(run_worker(get_settings()))
    if args.command == "serve":
        import uvicorn

        settings = get_settings()
        if settings.auth == "none" and args.host not in LOOPBACK:
            sys.exit(
                f"agentd: refusing to serve on {args.host} with AGENTD_AUTH=none; "
                "set AGENTD_AUTH=api_key or jwt (or bind to 127.0.0.1)."
            )

        uvicorn.run(
            "app.main:app",
            host=args.host,
            port=args.port,
            workers=args.workers,
            log_config=None,
            # uvicorn formats every access line before the logger drops it: skip the work when
            # the level hides INFO.
            access_log=logging.getLogger("uvicorn.access").isEnabledFor(logging.INFO),
        )


async def _collect_garbage(grace_seconds: float | None) -> list[str]:
    from app.artifacts.database import DatabaseArtifactService
    from app.artifacts.factory import create_blob_store
    from app.db.engine import create_db_engine

    settings = get_settings()
    db_engine = create_db_engine(
        settings.resolved_database_url, pool_size=1, sqlite_fast_path=settings.sqlite_fast_path
    )
    blob_store = create_blob_store(settings)
    try:
        service = DatabaseArtifactService(
            db_engine, blob_store, max_artifact_bytes=settings.max_artifact_bytes
        )
        grace = settings.gc_grace_seconds if grace_seconds is None else grace_seconds
        return await service.collect_garbage(grace_seconds=grace)
    finally:
        await blob_store.aclose()
        await db_engine.dispose()


async def _keys(args: argparse.Namespace) -> None:
    from app.db.engine import create_db_engine
    from app.security.api_keys import ApiKeyService

    settings = get_settings()
    db_engine = create_db_engine(
        settings.resolved_database_url, pool_size=1, sqlite_fast_path=settings.sqlite_fast_path
    )
    service = ApiKeyService(db_engine)
    try:
        if args.keys_command == "create":
            created = await service.create(
                name=args.name, apps=args.apps, user_id=args.user, admin=args.admin
            )
            sys.stdout.write(f"{created.token}\n")
        elif args.keys_command == "list":
            for key in await service.list_keys():
                state = "revoked" if key.revoke_time else "active"
                scope = f"apps={key.apps or '*'} user={key.user_id or '*'} admin={key.admin}"
                sys.stdout.write(f"{key.id}\t{state}\t{key.name}\t{scope}\n")
        elif not await service.revoke(args.key_id):
            sys.exit(f"agentd: no active key {args.key_id!r}")
    finally:
        await db_engine.dispose()


def _redact(url: str) -> str:
    from sqlalchemy.engine import make_url

    return make_url(url).render_as_string(hide_password=True)
