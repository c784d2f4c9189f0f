"""notes_agent: tools from a local MCP server (offline, scripted).

The agent's tools come from `notes_server.py`, an MCP server in this folder that agentd starts
as a subprocess (stdio) the first time the app needs its tools, and stops on shutdown.
"note: buy milk" makes the model call `add_note`, "my notes" `list_notes`; anything else is
answered with what it understands (HELP), where the scripted model's default would call the
first tool without its argument and show the MCP server's raw validation error. The notes file
is `<AGENTD_DATA_DIR>/notes.json`.
"""

import os
import sys
from pathlib import Path

from app.agents import LlmAgent
from app.models.scripted import Rule, ScriptedLlm
from app.tools.mcp_tool import MCPToolset, StdioConnectionParams, StdioServerParameters

SERVER = Path(__file__).resolve().with_name("notes_server.py")
DATA_DIR = Path(os.environ.get("AGENTD_DATA_DIR", "data")).resolve()

notes = MCPToolset(
    connection_params=StdioConnectionParams(
        server_params=StdioServerParameters(
            command=sys.executable,
            args=[str(SERVER)],
            env={"NOTES_FILE": str(DATA_DIR / "notes.json")},
        ),
        timeout=30,
    )
)

HELP = (
    "I keep notes. Say 'note: <text>' to add one (for example 'note: buy milk'), "
    "or 'my notes' to list them."
)

root_agent = LlmAgent(
    name="notes_agent",
    description="Keeps notes through a local MCP server.",
    model=ScriptedLlm(
        rules=[
            Rule(when_user=r"note: (?P<text>.+)", call=("add_note", {"text": "{text}"})),
            Rule(when_user=r"my notes", call=("list_notes", {})),
            Rule(when_user=r"", say=HELP),  # any other message
            Rule(when_tool="add_note", say="{result}"),
            Rule(when_tool="list_notes", say="your notes: {result}"),
        ]
    ),
    tools=[notes],
)
