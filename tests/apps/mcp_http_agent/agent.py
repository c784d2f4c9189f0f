"""A test app whose tools come from the test MCP server over streamable HTTP
(`$MCP_TEST_URL`), with each call carrying the session's user in `X-User`."""

import os

from app.agents import LlmAgent
from app.contexts.readonly import ReadonlyContext
from app.models.scripted import Rule, ScriptedLlm
from app.tools.mcp_tool import MCPToolset, StreamableHTTPConnectionParams


def user_header(context: ReadonlyContext) -> dict[str, str]:
    """The user the call is for, as the server's `whoami` reads it."""
    return {"X-User": context.user_id}


root_agent = LlmAgent(
    name="mcp_http_agent",
    model=ScriptedLlm(
        rules=[
            Rule(when_user="^both$", call=("add", {"a": 2, "b": 3})),
            Rule(when_tool="add", call=("whoami", {})),
            Rule(when_tool="whoami", say="you are {result}"),
        ]
    ),
    tools=[
        MCPToolset(
            connection_params=StreamableHTTPConnectionParams(
                url=os.environ.get("MCP_TEST_URL", "http://127.0.0.1:9/mcp"), timeout=30
            ),
            header_provider=user_header,
        )
    ],
)
