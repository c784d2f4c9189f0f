"""The `agentd` command (click), one module per group of commands:

- `app.cli.server`: `serve`, `worker`, `migrate`, `gc` (the service);
- `app.cli.keys`: `keys create | list | revoke`;
- `app.cli.client`: `run`, `apps`, `sessions`, `invocations tail` (a server with `--url`, or in
  process);
- `app.cli.scaffold`: `new app`.
"""

import click

from app import __version__
from app.cli.client import apps, invocations, run_app, sessions
from app.cli.keys import keys
from app.cli.scaffold import new
from app.cli.server import gc, migrate, serve, worker


@click.group(
    name="agentd",
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.version_option(__version__, prog_name="agentd")
def cli() -> None:
    """agentd hosts LLM agents over HTTP and keeps their sessions, invocations and artifacts.

    Start with `agentd serve --migrate` (what `make run` does), or try an app without a server:
    `agentd new app demo` then `agentd run demo "hello"`.
    """


for command in (serve, worker, migrate, gc, keys, run_app, apps, sessions, invocations, new):
    cli.add_command(command)


def main(argv: list[str] | None = None) -> None:
    """Entry point of the `agentd` command."""
    cli.main(args=argv, prog_name="agentd")
