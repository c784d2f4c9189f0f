"""An MCP server for the MCPToolset tests, written with the `mcp` SDK.

`python mcp_test_server.py stdio`, `... http <port>` (streamable HTTP at /mcp) or
`... sse <port>` (HTTP + SSE at /sse). It writes its pid
to `$MCP_TEST_DIR/server-<pid>.pid` (so a test can find and kill it, and count what is left) and
each call it serves to `$MCP_TEST_DIR/calls.log`. Tools: `add`, `shout`, `whoami` (the
`X-User` header of the HTTP request, if any), `snooze` (sleeps; a cancelled call is logged),
`picture` (a 1x1 PNG) and `fail` (an MCP error result).
"""

import asyncio
import base64
import json
import os
import sys
from pathlib import Path
from typing import Any

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ImageContent

PNG = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
    )
).decode()

DIR = Path(os.environ.get("MCP_TEST_DIR", "."))
server = MCPServer("agentd-test-server")


def _log(**entry: Any) -> None:
    with (DIR / "calls.log").open("a") as log:
        log.write(json.dumps({**entry, "pid": os.getpid()}) + "\n")


@server.tool()
def add(a: int, b: int) -> int:
    """Adds two numbers."""
    _log(tool="add")
    return a + b


@server.tool()
def shout(text: str) -> str:
    """Shouts the text."""
    _log(tool="shout")
    return text.upper() + "!"


@server.tool()
def whoami(ctx: Context) -> str:
    """Names the user the request came for."""
    request = ctx.request_context.request
    user = request.headers.get("x-user", "nobody") if request is not None else "stdio"
    _log(tool="whoami", user=user)
    return user


@server.tool()
async def snooze(seconds: float) -> str:
    """Sleeps for a while."""
    _log(tool="snooze", event="start")
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        _log(tool="snooze", event="cancelled")
        raise
    return "rested"


@server.tool()
def picture() -> ImageContent:
    """Draws a tiny picture."""
    _log(tool="picture")
    return ImageContent(data=PNG, mime_type="image/png")


@server.tool()
def fail() -> str:
    """Always fails."""
    raise ToolError("this tool always fails")


if __name__ == "__main__":
    (DIR / f"server-{os.getpid()}.pid").write_text(str(os.getpid()))
    if sys.argv[1] == "http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    elif sys.argv[1] == "sse":
        server.run("sse", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
