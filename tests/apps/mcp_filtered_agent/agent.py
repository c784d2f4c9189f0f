"""A test app with the test MCP server's tools filtered to `shout`; its model answers with the
names of the tools it was given."""

import os
import sys
from collections.abc import AsyncGenerator
from pathlib import Path

from google.genai import types

from app.agents import LlmAgent
from app.models.llm import BaseLlm, LlmRequest, LlmResponse
from app.tools.mcp_tool import MCPToolset, StdioConnectionParams, StdioServerParameters

SERVER = Path(__file__).resolve().parents[2] / "tools" / "mcp_test_server.py"


class ToolNamesLlm(BaseLlm):
    """Says which tools it was declared."""

    model: str = "tool-names"

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        """`tools: <names>`."""
        del stream
        text = "tools: " + ",".join(llm_request.tools_dict)
        yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text=text)]))


root_agent = LlmAgent(
    name="mcp_filtered_agent",
    model=ToolNamesLlm(),
    tools=[
        MCPToolset(
            connection_params=StdioConnectionParams(
                server_params=StdioServerParameters(
                    command=sys.executable,
                    args=[str(SERVER), "stdio"],
                    env={"MCP_TEST_DIR": os.environ.get("AGENTD_TEST_GATES", ".")},
                ),
                timeout=30,
            ),
            tool_filter=["shout"],
        )
    ],
)
