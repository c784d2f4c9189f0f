"""A test app whose tools come from tests/tools/mcp_test_server.py over stdio.

"both" makes the model call `add` and then `shout` with the sum; "sleep" calls `snooze`. The
server logs its calls and pid under $AGENTD_TEST_GATES.
"""

import os
import sys
from pathlib import Path

from app.agents import LlmAgent
from app.models.scripted import Rule, ScriptedLlm
from app.tools.mcp_tool import MCPToolset, StdioConnectionParams, StdioServerParameters

SERVER = Path(__file__).resolve().parents[2] / "tools" / "mcp_test_server.py"


root_agent = LlmAgent(
    name="mcp_test_agent",
    model=ScriptedLlm(
        rules=[
            Rule(when_user="^both$", call=("add", {"a": 2, "b": 3})),
            Rule(when_tool="add", call=("shout", {"text": "sum is {result}"})),
            Rule(when_tool="shout", say="{result}"),
            Rule(when_user="^sleep$", call=("snooze", {"seconds": 60})),
        ]
    ),
    tools=[
        MCPToolset(
            connection_params=StdioConnectionParams(
                server_params=StdioServerParameters(
                    command=sys.executable,
                    args=[str(SERVER), "stdio"],
                    env={"MCP_TEST_DIR": os.environ.get("AGENTD_TEST_GATES", ".")},
                ),
                timeout=30,
            )
        )
    ],
)
