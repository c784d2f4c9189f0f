"""The client commands: `run`, `apps`, `sessions` and `invocations tail`, against a server
(`--url`, AGENTD_URL) or in this process (see `app.cli.targets`)."""

import asyncio
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Any, TypeVar

import click

from app.cli.common import setup_logging
from app.cli.render import StreamPrinter
from app.cli.targets import Target, http_target, local_target
from app.errors import AgentdError
from app.invocations.models import SessionRef

T = TypeVar("T")

url_option = click.option(
    "--url",
    envvar="AGENTD_URL",
    default=None,
    help="A running agentd server (default $AGENTD_URL); without it, in this process on the "
    "local data folder.",
)
key_option = click.option(
    "--key",
    envvar="AGENTD_API_KEY",
    default=None,
    help="The API key to send with --url (default $AGENTD_API_KEY).",
)
user_option = click.option("--user", default="user", show_default=True, help="The user id.")


@asynccontextmanager
async def _target(
    url: str | None, key: str | None, *, database: bool = True, run: bool = False
) -> AsyncIterator[Target]:
    if url:
        async with http_target(url.rstrip("/"), key) as remote:
            yield remote
        return
    async with local_target(database=database, run_invocations=run) as local:
        yield local


def _call(work: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run `work`; a typed agentd error (no such app, ...) becomes a one-line failure."""
    setup_logging("WARNING")
    try:
        return asyncio.run(work())
    except AgentdError as exc:
        raise click.ClickException(f"{exc.detail} ({exc.type})") from None


async def _print_stream(frames: AsyncIterator[tuple[str, dict[str, Any]]]) -> StreamPrinter:
    printer = StreamPrinter()
    async for kind, data in frames:
        printer.frame(kind, data)
    return printer


@click.command(name="run")
@click.argument("app")
@click.argument("message")
@user_option
@click.option("--session", default=None, help="The session to continue (created if missing).")
@url_option
@key_option
def run_app(
    app: str, message: str, user: str, session: str | None, url: str | None, key: str | None
) -> None:
    """Send MESSAGE to APP and stream the answer as it comes.

    Text is written as the model produces it; tool calls and results show as `[call]` and
    `[result]` lines; an invocation that waits for the client (a confirmation, a long-running
    tool's result) ends with `[waiting]` lines naming what it waits for. The session id goes
    to stderr, to continue with --session, and at the end the invocation's id and status.
    Exits 1 if the invocation failed or was cancelled, or the stream was cut before its end.
    """

    async def work() -> StreamPrinter:
        async with _target(url, key, run=True) as target:
            session_id = await target.ensure_session(app, user, session)
            click.echo(f"session {session_id} (user {user})", err=True)
            return await _print_stream(target.run(SessionRef(app, user, session_id), message))

    printer = _call(work)
    click.echo(f"invocation {printer.invocation_id}: {printer.status or 'stream cut'}", err=True)
    if printer.failed or printer.status is None:
        raise SystemExit(1)


@click.command()
@url_option
@key_option
def apps(url: str | None, key: str | None) -> None:
    """List the apps: name and description."""

    async def work() -> list[tuple[str, str]]:
        async with _target(url, key, database=False) as target:
            return [(row.name, row.description) for row in await target.list_apps()]

    rows = _call(work)
    width = max((len(name) for name, _ in rows), default=0)
    for name, description in rows:
        click.echo(f"{name:<{width}}  {description}".rstrip())


@click.command(short_help="List a user's sessions of an app.")
@click.argument("app")
@click.argument("user")
@url_option
@key_option
def sessions(app: str, user: str, url: str | None, key: str | None) -> None:
    """List USER's sessions of APP, most recently updated first: id, last update, and (in
    process) the number of events."""

    async def work() -> list[dict[str, Any]]:
        async with _target(url, key) as target:
            return await target.list_sessions(app, user)

    for session in _call(work):
        updated = datetime.fromtimestamp(session.get("lastUpdateTime", 0)).isoformat(" ", "seconds")
        events = session.get("lastSeq")
        suffix = f"\t{events} events" if events is not None else ""
        click.echo(f"{session['id']}\t{updated}{suffix}")


@click.group()
def invocations() -> None:
    """Follow invocations."""


@invocations.command()
@click.argument("invocation_id", metavar="ID")
@click.option("--app", required=True, help="The invocation's app.")
@user_option
@click.option("--session", required=True, help="The invocation's session.")
@url_option
@key_option
def tail(
    invocation_id: str, app: str, user: str, session: str, url: str | None, key: str | None
) -> None:
    """Print invocation ID's events from its start, then live ones until it ends (as `run`
    shows them). Exits 1 if it failed or was cancelled, or the stream was cut before its end."""

    async def work() -> StreamPrinter:
        async with _target(url, key) as target:
            return await _print_stream(target.follow(SessionRef(app, user, session), invocation_id))

    printer = _call(work)
    if printer.failed or printer.status is None:
        raise SystemExit(1)
