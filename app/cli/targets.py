"""Where the client commands (`run`, `apps`, `sessions`, `invocations tail`) send their work: a
running server over HTTP (`--url`, AGENTD_URL), or this process.

In process, the commands build what a server builds (`app.runtime.running`: the database of the
settings, SQLite under AGENTD_DATA_DIR by default, local blobs, the invocation manager) and call
it as the routes do, so `agentd run` works offline with no server, and what it stores (sessions,
invocations, events) a server on the same data folder serves later. A local SQLite database is
migrated when it is behind; any other database must be migrated with `agentd migrate`.

Both yield an invocation's stream as `(kind, data)` frames in the wire JSON of the invocation
routes (kinds `event`, `partial`, `error`, `done`), for `app.cli.render` to show.
"""

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, Protocol

import click
import httpx
import orjson
from sqlalchemy.engine import make_url

from app.cli.common import settings
from app.cli.startup import check_migrated
from app.errors import AgentdError
from app.invocations.models import CreateInvocationRequest, SessionRef
from app.invocations.registry import AppRegistry
from app.runtime import Services, running

logger = logging.getLogger("agentd")

Frame = tuple[str, dict[str, Any]]


@dataclass(frozen=True)
class AppRow:
    """An app as `agentd apps` lists it."""

    name: str
    description: str


class Target(Protocol):
    """What the client commands need, from a server or in process."""

    async def list_apps(self) -> list[AppRow]:
        """The apps, sorted by name."""
        ...

    async def list_sessions(self, app: str, user: str) -> list[dict[str, Any]]:
        """The user's sessions (wire JSON, without events), most recently updated first."""
        ...

    async def ensure_session(self, app: str, user: str, session_id: str | None) -> str:
        """The id of the session named (created if missing), or of a new one."""
        ...

    def run(self, ref: SessionRef, message: str) -> AsyncIterator[Frame]:
        """Start an invocation for `message` and stream it."""
        ...

    def follow(self, ref: SessionRef, invocation_id: str) -> AsyncIterator[Frame]:
        """An existing invocation's events from its start, until it ends."""
        ...


def invocation_body(message: str) -> dict[str, Any]:
    """The invocation request of a terminal message: streamed, text chunks included."""
    return {
        "newMessage": {"role": "user", "parts": [{"text": message}]},
        "mode": "stream",
        "runConfig": {"streamingMode": "sse"},
    }


# -- over HTTP -----------------------------------------------------------------------------


class HttpTarget:
    """A running agentd server."""

    def __init__(self, client: httpx.AsyncClient) -> None:
        self._http = client

    async def list_apps(self) -> list[AppRow]:
        """`GET /list-apps?detailed=true`."""
        body = await self._json("GET", "/list-apps", params={"detailed": "true"})
        return [AppRow(app["name"], app.get("description") or "") for app in body["apps"]]

    async def list_sessions(self, app: str, user: str) -> list[dict[str, Any]]:
        """Every page of `GET /apps/{app}/users/{user}/sessions`."""
        sessions: list[dict[str, Any]] = []
        params: dict[str, str] = {}
        while True:
            response = await self._request("GET", _sessions(app, user), params=params)
            sessions.extend(response.json())
            token = response.headers.get("X-Next-Page-Token")
            if not token:
                return sessions
            params = {"pageToken": token}

    async def ensure_session(self, app: str, user: str, session_id: str | None) -> str:
        """`GET` the session; `POST` it if missing."""
        if session_id is not None:
            response = await self._http.get(f"{_sessions(app, user)}/{session_id}")
            if response.status_code == 200:
                return session_id
            if response.status_code != 404:
                _raise_problem(response)
        body = {} if session_id is None else {"sessionId": session_id}
        created = await self._json("POST", _sessions(app, user), json=body)
        return str(created["id"])

    async def run(self, ref: SessionRef, message: str) -> AsyncIterator[Frame]:
        """`POST .../invocations` with mode `stream`."""
        url = f"{_session(ref)}/invocations"
        async with self._http.stream("POST", url, json=invocation_body(message)) as response:
            async for frame in _sse_frames(response):
                yield frame

    async def follow(self, ref: SessionRef, invocation_id: str) -> AsyncIterator[Frame]:
        """`GET .../invocations/{id}/events` (SSE)."""
        url = f"{_session(ref)}/invocations/{invocation_id}/events"
        async with self._http.stream("GET", url) as response:
            async for frame in _sse_frames(response):
                yield frame

    async def _request(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        response = await self._http.request(method, url, **kwargs)
        if response.is_error:
            _raise_problem(response)
        return response

    async def _json(self, method: str, url: str, **kwargs: Any) -> Any:
        return (await self._request(method, url, **kwargs)).json()


def _sessions(app: str, user: str) -> str:
    return f"/apps/{app}/users/{user}/sessions"


def _session(ref: SessionRef) -> str:
    return f"{_sessions(ref.app_name, ref.user_id)}/{ref.session_id}"


async def _sse_frames(response: httpx.Response) -> AsyncIterator[Frame]:
    """The `event:`/`data:` frames of an SSE response (a problem answer raised as one line)."""
    if response.is_error:
        await response.aread()
        _raise_problem(response)
    kind, data = "message", ""
    async for line in response.aiter_lines():
        if line.startswith("event:"):
            kind = line[6:].strip()
        elif line.startswith("data:"):
            data += line[5:].strip()
        elif not line and data:
            yield kind, orjson.loads(data)
            if kind == "done":
                return
            kind, data = "message", ""


def _raise_problem(response: httpx.Response) -> None:
    """A server's problem+json answer as one line (or its status, if it is not a problem)."""
    try:
        problem = response.json()
    except ValueError:
        problem = {}
    if not isinstance(problem, dict):
        problem = {}
    detail = problem.get("detail") or problem.get("title") or response.reason_phrase
    kind = f" ({problem['type']})" if problem.get("type") else ""
    raise click.ClickException(f"the server answered {response.status_code}: {detail}{kind}")


@asynccontextmanager
async def http_target(url: str, key: str | None) -> AsyncIterator[HttpTarget]:
    """A target for the server at `url`, authenticating with `key` if given."""
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    # No read timeout: a stream waits as long as the agent thinks (the server sends heartbeats).
    timeout = httpx.Timeout(30.0, read=None)
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=timeout) as client:
        try:
            yield HttpTarget(client)
        except httpx.TransportError as exc:
            raise click.ClickException(f"cannot reach agentd at {url}: {exc}") from None


# -- in process ----------------------------------------------------------------------------


class LocalTarget:
    """This process, on the services of the settings (see the module docstring)."""

    def __init__(self, registry: AppRegistry, services: Services | None) -> None:
        self._registry = registry
        self._services = services

    @property
    def services(self) -> Services:
        """The running services (a target for `apps` runs none)."""
        if self._services is None:
            raise RuntimeError("this local target was opened without a database")
        return self._services

    async def list_apps(self) -> list[AppRow]:
        """The apps of AGENTD_AGENTS_DIR, with their root agent's description as a server
        lists them (their README's first line if an app does not load)."""
        rows = []
        for info in self._registry.list_apps():
            try:
                description = self._registry.load(info.name).root_agent.description
            except AgentdError:
                description = ""
            rows.append(AppRow(info.name, description or info.description))
        return rows

    async def list_sessions(self, app: str, user: str) -> list[dict[str, Any]]:
        """Every page of the session service's listing, with each one's last seq."""
        self._registry.require(app)
        sessions = self.services.session_service
        rows: list[dict[str, Any]] = []
        token: str | None = None
        while True:
            page = await sessions.list_sessions(
                app_name=app, user_id=user, page_size=1000, page_token=token
            )
            for session in page.sessions:
                row = session.model_dump(mode="json", by_alias=True, exclude_none=True)
                rows.append({**row, "lastSeq": session.last_seq})
            token = page.next_page_token
            if not token:
                return rows

    async def ensure_session(self, app: str, user: str, session_id: str | None) -> str:
        """The named session, created if missing, or a new one."""
        self._registry.require(app)
        sessions = self.services.session_service
        if session_id is not None:
            found = await sessions.get_session(app_name=app, user_id=user, session_id=session_id)
            if found is not None:
                return session_id
        created = await sessions.create_session(app_name=app, user_id=user, session_id=session_id)
        return created.id

    async def run(self, ref: SessionRef, message: str) -> AsyncIterator[Frame]:
        """`InvocationManager.start` and `follow`, as the invocations route does."""
        manager = self.services.invocation_manager
        request = CreateInvocationRequest.model_validate(invocation_body(message))
        handle = await manager.start(ref, request)
        async for frame in _local_frames(manager.follow(handle, after_seq=0)):
            yield frame

    async def follow(self, ref: SessionRef, invocation_id: str) -> AsyncIterator[Frame]:
        """`InvocationManager.attach` and `follow`, as the events route does."""
        manager = self.services.invocation_manager
        handle = await manager.attach(ref, invocation_id)
        async for frame in _local_frames(manager.follow(handle, after_seq=0)):
            yield frame


async def _local_frames(items: AsyncIterator[Any]) -> AsyncIterator[Frame]:
    async for item in items:
        if item.kind == "done" and item.invocation is not None:
            yield "done", item.invocation.to_wire()
        elif item.event is not None:
            yield item.kind, item.event.to_wire()


async def _prepare_local_database(database_url: str) -> None:
    """Migrate a local SQLite database that is behind; require any other to be migrated."""
    if make_url(database_url).get_backend_name() == "sqlite":
        try:
            await check_migrated(database_url, command=None)
        except click.ClickException:
            from app.db.migrate import upgrade

            upgrade(database_url)
            logger.info("local database migrated")
        return
    await check_migrated(database_url, command=None)


@asynccontextmanager
async def local_target(*, database: bool, run_invocations: bool) -> AsyncIterator[LocalTarget]:
    """This process as a target; with `database`, on running services (which run invocations
    here with `run_invocations`)."""
    current = settings()
    registry = AppRegistry(current.agents_dir)
    if not database:
        try:
            yield LocalTarget(registry, None)
        finally:
            await registry.close()
        return
    await _prepare_local_database(current.resolved_database_url)
    current = current.model_copy(update={"run_invocations": run_invocations})
    async with running(current, registry) as services:
        yield LocalTarget(registry, services)
