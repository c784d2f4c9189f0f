"""MCP client sessions: how to reach a server, and one live session per server and headers.

An MCP session is a stack of async context managers (the transport: a subprocess over stdio, or
HTTP; then the `ClientSession`) whose anyio task groups must be left by the task that entered
them. So each session is owned by a task of its own (`_Connection`): it opens the stack, hands
the session out, and closes it when asked, or when the transport dies. Tools call through the
session from their own tasks.

Sessions are opened lazily (the first `get_tools` or call), shared by every invocation of the
process for the same headers (a `header_provider` that returns per-user headers gets a session
per user), dropped when a call finds them broken (the next call opens a new one), and closed by
`close()` (the app registry calls the toolset's `close` on shutdown). Closing a stdio session
ends its subprocess (the SDK terminates the process tree), so no server outlives agentd.
"""

import asyncio
import contextlib
import logging
import sys
from collections.abc import AsyncIterator, Mapping
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from typing import Any, TextIO

import httpx2
from mcp import StdioServerParameters
from mcp.client.session import ClientSession
from mcp.client.sse import sse_client
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from pydantic import BaseModel, ConfigDict

logger = logging.getLogger("agentd.mcp")


class StdioConnectionParams(BaseModel):
    """A local MCP server run as a subprocess, spoken to over stdin/stdout (ADK's name)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    server_params: StdioServerParameters
    #: Seconds to start the server and complete the MCP handshake.
    timeout: float = 5.0


class SseConnectionParams(BaseModel):
    """A remote MCP server over HTTP + server-sent events (the older transport)."""

    url: str
    headers: dict[str, Any] | None = None
    timeout: float = 5.0
    sse_read_timeout: float = 300.0


class StreamableHTTPConnectionParams(BaseModel):
    """A remote MCP server over streamable HTTP."""

    url: str
    headers: dict[str, Any] | None = None
    timeout: float = 5.0
    sse_read_timeout: float = 300.0
    terminate_on_close: bool = True


ConnectionParams = StdioConnectionParams | SseConnectionParams | StreamableHTTPConnectionParams

#: ADK's older names, still used by its samples and docs.
SseServerParams = SseConnectionParams
StreamableHTTPServerParams = StreamableHTTPConnectionParams


class _Connection:
    """One session and the task that owns its context managers."""

    def __init__(self) -> None:
        self.ready = asyncio.Event()
        self.stop = asyncio.Event()
        self.session: ClientSession | None = None
        self.error: BaseException | None = None
        self.task: asyncio.Task[None] | None = None

    @property
    def alive(self) -> bool:
        return self.task is not None and not self.task.done() and not self.stop.is_set()

    async def close(self) -> None:
        self.stop.set()
        if self.task is not None:
            with contextlib.suppress(BaseException):
                await self.task


class MCPSessionManager:
    """Live MCP sessions to one server, one per distinct set of headers (ADK's name)."""

    def __init__(
        self,
        connection_params: ConnectionParams | StdioServerParameters,
        errlog: TextIO = sys.stderr,
    ) -> None:
        # ADK also takes the bare server parameters, with its default handshake timeout.
        if isinstance(connection_params, StdioServerParameters):
            connection_params = StdioConnectionParams(server_params=connection_params)
        self._params: ConnectionParams = connection_params
        self._errlog = errlog
        self._connections: dict[tuple[tuple[str, str], ...], _Connection] = {}
        self._lock = asyncio.Lock()

    async def create_session(self, headers: Mapping[str, str] | None = None) -> ClientSession:
        """The live session for these headers, opened (and the handshake done) if needed."""
        key = _key(headers)
        async with self._lock:
            connection = self._connections.get(key)
            if connection is None or not connection.alive:
                connection = _Connection()
                connection.task = asyncio.create_task(
                    self._own(connection, dict(headers or {})), name="mcp session"
                )
                self._connections[key] = connection
        await connection.ready.wait()
        if connection.session is None:
            error = connection.error or ConnectionError("the MCP session closed")
            raise ConnectionError(f"Cannot open an MCP session: {error}") from error
        return connection.session

    async def discard(self, headers: Mapping[str, str] | None = None) -> None:
        """Close the session for these headers (it broke); the next call opens a new one."""
        async with self._lock:
            connection = self._connections.pop(_key(headers), None)
        if connection is not None:
            await connection.close()

    async def close(self) -> None:
        """Close every session (and end their subprocesses)."""
        async with self._lock:
            connections, self._connections = list(self._connections.values()), {}
        for connection in connections:
            await connection.close()

    async def _own(self, connection: _Connection, headers: dict[str, str]) -> None:
        try:
            async with AsyncExitStack() as stack:
                read, write = await stack.enter_async_context(self._transport(headers))
                session = await stack.enter_async_context(ClientSession(read, write))
                async with asyncio.timeout(self._params.timeout):
                    await session.initialize()
                connection.session = session
                connection.ready.set()
                await connection.stop.wait()
        except BaseException as error:
            connection.error = error
            if not isinstance(error, Exception):
                raise
            logger.warning("MCP session to %s ended: %s", _describe(self._params), error)
        finally:
            connection.stop.set()  # not `alive` any more: the next caller opens a new one
            connection.ready.set()

    def _transport(self, headers: dict[str, str]) -> AbstractAsyncContextManager[Any]:
        params = self._params
        if isinstance(params, StdioConnectionParams):
            return stdio_client(params.server_params, errlog=self._errlog)
        merged = {**(params.headers or {}), **headers}
        if isinstance(params, SseConnectionParams):
            return sse_client(
                params.url,
                headers=merged,
                timeout=params.timeout,
                sse_read_timeout=params.sse_read_timeout,
            )
        return _streamable_http(params, merged)


@asynccontextmanager
async def _streamable_http(
    params: StreamableHTTPConnectionParams, headers: dict[str, Any]
) -> AsyncIterator[Any]:
    timeout = httpx2.Timeout(params.timeout, read=params.sse_read_timeout)
    async with httpx2.AsyncClient(headers=headers, timeout=timeout) as client:
        async with streamable_http_client(
            params.url, http_client=client, terminate_on_close=params.terminate_on_close
        ) as streams:
            yield streams


def _key(headers: Mapping[str, str] | None) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((headers or {}).items()))


def _describe(params: ConnectionParams) -> str:
    if isinstance(params, StdioConnectionParams):
        return " ".join([params.server_params.command, *params.server_params.args])
    return params.url


__all__ = [
    "MCPSessionManager",
    "SseConnectionParams",
    "SseServerParams",
    "StdioConnectionParams",
    "StdioServerParameters",
    "StreamableHTTPConnectionParams",
    "StreamableHTTPServerParams",
]
