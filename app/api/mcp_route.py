"""The `/apps/{app_name}/mcp` route, loading the MCP server (`app.api.mcp_server`) on first use.

The `mcp` SDK's server side costs about 15 MiB of memory and 0.2 s of start-up once imported;
most deployments never receive an MCP request. So the route is this small ASGI app: the first
request imports the server, and a task of its own runs the SDK's session manager (whose task
group must be left by the task that entered it) until the app's lifespan ends.
"""

import asyncio
import contextlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from fastapi import FastAPI
from starlette.types import Receive, Scope, Send

if TYPE_CHECKING:
    from app.api.mcp_server import McpEndpoint

PATH = "/apps/{app_name}/mcp"


class LazyMcpRoute:
    """The route's ASGI app; the MCP server behind it starts with the first request."""

    def __init__(self) -> None:
        self._endpoint: McpEndpoint | None = None
        self._lock = asyncio.Lock()
        self._stop = asyncio.Event()
        self._runner: asyncio.Task[None] | None = None

    def add_to(self, app: FastAPI) -> None:
        """Route `PATH` here (JSON-RPC, so not in the OpenAPI document)."""
        # Starlette serves a route whose endpoint is not a function as an ASGI app; the
        # annotation of `add_route` names only request handlers.
        app.add_route(PATH, self, methods=["POST"], include_in_schema=False)  # type: ignore[arg-type]

    @asynccontextmanager
    async def serving(self) -> AsyncIterator[None]:
        """The app's lifespan: MCP requests are served while this is open; on exit the server
        (if it was started) stops."""
        self._stop = asyncio.Event()
        try:
            yield
        finally:
            self._stop.set()
            runner, self._runner, self._endpoint = self._runner, None, None
            if runner is not None:
                with contextlib.suppress(asyncio.CancelledError):
                    await runner

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Start the MCP server if this is the first request, then let it answer."""
        endpoint = self._endpoint or await self._start()
        await endpoint(scope, receive, send)

    async def _start(self) -> "McpEndpoint":
        async with self._lock:
            if self._endpoint is not None:
                return self._endpoint
            from app.api.mcp_server import McpEndpoint  # the SDK, on first use only

            endpoint = McpEndpoint()
            ready = asyncio.Event()

            async def run() -> None:
                async with endpoint.run():
                    ready.set()
                    await self._stop.wait()

            self._runner = asyncio.create_task(run(), name="mcp server")
            await ready.wait()
            self._endpoint = endpoint
            return endpoint
