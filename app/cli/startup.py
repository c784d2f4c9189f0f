"""The checks `agentd serve` and `agentd worker` make before anything starts, each failing with
one line that names the fix instead of a traceback from deep inside the lifespan.

- The port is bound first, by the command itself, and the bound socket handed to uvicorn: a
  second server on a busy port stops there, before it opens (or migrates) the database that the
  first one serves, and there is no window between a check and uvicorn's own bind.
- The database's Alembic revision must be the code's head. A fresh data folder has no tables, and
  the first query would fail with "no such table" deep in the lifespan; an older schema would
  fail later and worse. A SQLite file that does not exist is not created by the check.
"""

import asyncio
import errno
import logging
import socket
from pathlib import Path

import click
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.pool import NullPool

from app.cli.common import redact
from app.db.migrate import alembic_config


def bind_port(host: str, port: int) -> socket.socket:
    """A socket bound to `host:port` as uvicorn binds it, or a one-line error naming the port."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family=family)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise click.ClickException(
                f"port {port} on {host} is already in use (another agentd?): stop that "
                "process or choose another port with --port."
            ) from None
        raise click.ClickException(f"cannot listen on {host}:{port}: {exc.strerror}.") from None
    sock.set_inheritable(True)  # uvicorn's worker processes (--workers) serve on it too
    return sock


def require_migrated(database_url: str, *, command: str | None) -> None:
    """Fail with one line unless the database is at the code's head revision.

    Args:
        command: the starting command (`serve`, `worker`) that takes `--migrate`, named in the
            fix it is told; None for others.
    """
    asyncio.run(check_migrated(database_url, command=command))


async def check_migrated(database_url: str, *, command: str | None) -> None:
    """`require_migrated` in a running event loop."""
    shown = redact(database_url)
    try:
        current = await read_database_heads(database_url)
    except Exception as exc:  # whatever the driver raises: the line names it, the fix is theirs
        first_line = (str(exc).strip().splitlines() or [""])[0]
        raise click.ClickException(
            f"cannot read the schema version of the database at {shown}: "
            f"{type(exc).__name__}: {first_line}"
        ) from None
    scripts = ScriptDirectory.from_config(alembic_config(database_url))
    wanted = set(scripts.get_heads())
    if current == wanted:
        return
    fix = "run `agentd migrate`"
    if command is not None:
        fix += f" (or start with `agentd {command} --migrate`"
        fix += ", as `make run` does)" if command == "serve" else ")"
    if not current:
        raise click.ClickException(f"the database at {shown} is not migrated: {fix}.")
    at = ", ".join(sorted(current))
    if current - {script.revision for script in scripts.walk_revisions()}:
        raise click.ClickException(
            f"the database at {shown} is at revision {at}, which this agentd does not know "
            "(a newer agentd migrated it?): run that version, or a database of this one."
        )
    raise click.ClickException(
        f"the database at {shown} is at revision {at}, this agentd needs "
        f"{', '.join(sorted(wanted))}: {fix}."
    )


async def read_database_heads(database_url: str) -> set[str]:
    """The revision(s) the database is at; empty when it was never migrated."""
    url = make_url(database_url)
    if url.get_backend_name() == "sqlite":
        path = url.database or ""
        if path in ("", ":memory:") or not Path(path).is_file():
            return set()  # never migrated, and the check must not create the file
    db_engine = create_async_engine(database_url, poolclass=NullPool)
    # Alembic says at INFO which dialect it configured: noise before a check's one line.
    alembic_logger = logging.getLogger("alembic.runtime.migration")
    level = alembic_logger.level
    alembic_logger.setLevel(logging.WARNING)
    try:
        async with db_engine.connect() as connection:
            heads = await connection.run_sync(
                lambda sync: MigrationContext.configure(sync).get_current_heads()
            )
        return set(heads)
    finally:
        alembic_logger.setLevel(level)
        await db_engine.dispose()
