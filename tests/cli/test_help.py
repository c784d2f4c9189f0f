"""`--help` on every command and group of `agentd`."""

import click
import pytest

from app.cli import cli
from tests.cli.conftest import Agentd


def _paths(group: click.Group, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    paths = [prefix]
    for name, command in group.commands.items():
        if isinstance(command, click.Group):
            paths.extend(_paths(command, (*prefix, name)))
        else:
            paths.append((*prefix, name))
    return paths


@pytest.mark.parametrize("path", _paths(cli), ids=lambda path: " ".join(path) or "agentd")
def test_every_command_has_help(agentd: Agentd, path: tuple[str, ...]) -> None:
    result = agentd(*path, "--help")
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(f"Usage: agentd {' '.join(path)}".rstrip())


def test_every_existing_command_is_still_there() -> None:
    names = {" ".join(path) for path in _paths(cli)}
    old = {"serve", "worker", "migrate", "gc", "keys create", "keys list", "keys revoke"}
    new = {"run", "apps", "sessions", "invocations tail", "new app"}
    assert old | new <= names
