"""Alembic environment: runs migrations over the async engine agentd itself uses."""

import asyncio
from logging.config import fileConfig

from alembic import context
from sqlalchemy.engine import Connection

import app.db.tables  # noqa: F401 - registers every table on the metadata
from app.db.base import Base
from app.db.engine import create_db_engine, is_sqlite
from app.settings import get_settings

config = context.config
if config.config_file_name is not None and config.attributes.get("configure_logger", True):
    fileConfig(config.config_file_name, disable_existing_loggers=False)

target_metadata = Base.metadata


def _url() -> str:
    return config.get_main_option("sqlalchemy.url") or get_settings().resolved_database_url


def _configure(connection: Connection | None, url: str) -> None:
    context.configure(
        connection=connection,
        url=None if connection is not None else url,
        target_metadata=target_metadata,
        render_as_batch=is_sqlite(url),
        compare_type=True,
        literal_binds=connection is None,
    )


def run_migrations_offline() -> None:
    """Emit SQL to stdout instead of running it (`alembic upgrade head --sql`)."""
    _configure(None, _url())
    with context.begin_transaction():
        context.run_migrations()


def _run_sync(connection: Connection) -> None:
    _configure(connection, _url())
    with context.begin_transaction():
        context.run_migrations()


async def run_migrations_online() -> None:
    """Run the migrations in one transaction over an async connection."""
    db_engine = create_db_engine(_url(), pool_size=1)
    try:
        async with db_engine.connect() as connection:
            await connection.run_sync(_run_sync)
            await connection.commit()
    finally:
        await db_engine.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    connection = config.attributes.get("connection")
    if connection is not None:
        _run_sync(connection)
    else:
        asyncio.run(run_migrations_online())
