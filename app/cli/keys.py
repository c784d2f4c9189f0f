"""`agentd keys`: create, list and revoke API keys (AGENTD_AUTH=api_key).

A created key goes to stdout alone, so scripts can capture it (`KEY=$(agentd keys create ci)`);
what was created (id, scope) goes to stderr for the person at the terminal.
"""

import asyncio
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import TypeVar

import click

from app.cli.common import settings, setup_logging
from app.security.api_keys import ApiKey, ApiKeyService

T = TypeVar("T")


def _with_service(work: Callable[[ApiKeyService], Awaitable[T]]) -> T:
    async def run() -> T:
        from app.db.engine import create_db_engine

        current = settings()
        db_engine = create_db_engine(
            current.resolved_database_url, pool_size=1, sqlite_fast_path=current.sqlite_fast_path
        )
        try:
            return await work(ApiKeyService(db_engine))
        finally:
            await db_engine.dispose()

    setup_logging("WARNING")
    return asyncio.run(run())


def _scope(key: ApiKey) -> str:
    apps = ",".join(key.apps) if key.apps else "*"
    return f"apps={apps} user={key.user_id or '*'} admin={'yes' if key.admin else 'no'}"


def _when(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


@click.group()
def keys() -> None:
    """Manage API keys (AGENTD_AUTH=api_key)."""


@keys.command()
@click.argument("name", required=False)
# The form before NAME was an argument; scripts that pass it still work.
@click.option("--name", "name_option", hidden=True)
@click.option(
    "--app", "apps", multiple=True, help="An app the key may use (repeatable; default all)."
)
@click.option("--user", default=None, help="Bind the key to one user id (default: any user).")
@click.option("--admin", is_flag=True, help="May write app: state and read metrics.")
def create(
    name: str | None, name_option: str | None, apps: tuple[str, ...], user: str | None, admin: bool
) -> None:
    """Create a key named NAME and print it (it is shown once, never stored)."""
    label = name or name_option
    if not label or not label.strip():
        raise click.UsageError("a key needs a name, to tell keys apart: agentd keys create NAME")
    created = _with_service(
        lambda service: service.create(
            name=label, apps=list(apps) or None, user_id=user, admin=admin
        )
    )
    scope = ApiKey(
        id=created.id,
        name=label,
        apps=sorted(apps) or None,
        user_id=user,
        admin=admin,
        create_time=0,
        revoke_time=None,
    )
    click.echo(
        f"created key {created.id} {label!r} ({_scope(scope)}); it is shown once, keep it:",
        err=True,
    )
    click.echo(created.token)


@keys.command(name="list")
def list_keys() -> None:
    """List the keys (never their secrets): id, state, name, scope."""
    for key in _with_service(lambda service: service.list_keys()):
        state = "active" if key.revoke_time is None else f"revoked {_when(key.revoke_time)}"
        click.echo(f"{key.id}\t{state}\t{key.name}\t{_scope(key)}")


@keys.command()
@click.argument("id_or_key")
def revoke(id_or_key: str) -> None:
    """Revoke a key at once, named by its id (as `keys list` shows) or its whole string."""
    found = _with_service(lambda service: service.revoke_matching(id_or_key))
    if found is None:
        shown = id_or_key if not id_or_key.startswith("agentd_") else "that key string"
        raise click.ClickException(f"no key matches {shown}: see `agentd keys list`.")
    key, revoked_now = found
    if not revoked_now and key.revoke_time is not None:
        click.echo(f"key {key.id} {key.name!r} was revoked already ({_when(key.revoke_time)}).")
        return
    click.echo(f"revoked key {key.id} {key.name!r} ({_scope(key)}).")
