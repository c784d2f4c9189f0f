"""A small MCP server shipped with agentd (offline): notes kept in a JSON file.

Run by `notes_agent` over stdio (`python notes_server.py`); the file is
`$NOTES_FILE` (default `notes.json` in the working directory). Tools: `add_note(text)` and
`list_notes()`. Written with the official `mcp` SDK, as any MCP server would be.
"""

import json
import os
from pathlib import Path

from mcp.server import MCPServer

server = MCPServer("agentd-notes")


def _path() -> Path:
    return Path(os.environ.get("NOTES_FILE", "notes.json"))


def _notes() -> list[str]:
    path = _path()
    return list(json.loads(path.read_text())) if path.exists() else []


@server.tool()
def add_note(text: str) -> str:
    """Keeps a note."""
    notes = [*_notes(), text]
    _path().write_text(json.dumps(notes))
    return f"noted ({len(notes)} notes)"


@server.tool()
def list_notes() -> list[str]:
    """Lists the notes kept so far."""
    return _notes()


if __name__ == "__main__":
    server.run()
