"""Programmatic Alembic: what `agentd migrate`, `make run` and the tests use to build the schema."""

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from alembic import command
from alembic.config import Config

PROJECT_ROOT = Path(__file__).resolve().parents[2]


def alembic_config(database_url: str) -> Config:
    """An Alembic config for this source tree pointed at `database_url`."""
    config = Config(str(PROJECT_ROOT / "alembic.ini"))
    config.set_main_option("script_location", str(PROJECT_ROOT / "migrations"))
    # ConfigParser interpolation would choke on '%' in passwords.
    config.set_main_option("sqlalchemy.url", database_url.replace("%", "%%"))
    config.attributes["configure_logger"] = False
    return config


def _outside_event_loop(action: Callable[[], None]) -> None:
    # env.py drives the async engine with asyncio.run(), which cannot nest in a running loop
    # (e.g. when called from async code or an async test): then run it in a worker thread.
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        action()
        return
    with ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(action).result()


def upgrade(database_url: str, revision: str = "head") -> None:
    """Apply migrations up to `revision`."""
    _outside_event_loop(lambda: command.upgrade(alembic_config(database_url), revision))


def downgrade(database_url: str, revision: str = "base") -> None:
    """Revert migrations down to `revision`."""
    _outside_event_loop(lambda: command.downgrade(alembic_config(database_url), revision))
