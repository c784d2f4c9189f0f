"""The `agentd` command in this process (click's CliRunner) on settings of the test's own."""

import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from app.cli import cli
from app.settings import get_settings
from tests.live_server import build_agents_dir


@dataclass
class Agentd:
    """`agentd ...` in this process, with `env` as the environment's AGENTD_* settings."""

    root: Path
    env: dict[str, str]

    def __call__(self, *args: str) -> Result:
        """Run `agentd *args`; settings are read afresh, as in a new process."""
        get_settings.cache_clear()
        try:
            return CliRunner().invoke(cli, list(args), env=self.env, catch_exceptions=False)
        finally:
            get_settings.cache_clear()


@pytest.fixture
def agentd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Agentd]:
    """The command on a data folder of the test's own, the shipped and test apps."""
    for name in list(os.environ):
        if name.startswith("AGENTD_"):
            monkeypatch.delenv(name)
    env = {
        "AGENTD_DATA_DIR": str(tmp_path / "data"),
        "AGENTD_AGENTS_DIR": str(build_agents_dir(tmp_path / "agents")),
        "AGENTD_LOG_LEVEL": "WARNING",
    }
    # Each command installs agentd's log handler on CliRunner's stderr, closed after the call.
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield Agentd(tmp_path, env)
    root.handlers[:] = handlers
    root.setLevel(level)
