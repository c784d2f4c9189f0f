"""What every `agentd` command shares: logging set-up, the settings, shown database URLs."""

import os

from sqlalchemy.engine import make_url

from app.observability.logging import configure_logging
from app.settings import Settings, get_settings


def setup_logging(default_level: str) -> None:
    """Log at AGENTD_LOG_LEVEL, else `default_level`: the server commands log INFO, the client
    commands (`run`, `apps`, ...) only what goes wrong, so their answer is what the terminal
    shows. The format is AGENTD_LOG_FORMAT's (text on a terminal by default)."""
    configure_logging(
        os.environ.get("AGENTD_LOG_LEVEL", default_level), log_format=settings().log_format
    )


def settings() -> Settings:
    """The settings from the environment (and `.env`), read once per process."""
    return get_settings()


def redact(url: str) -> str:
    """A database URL as it may be printed: without its password."""
    return make_url(url).render_as_string(hide_password=True)
