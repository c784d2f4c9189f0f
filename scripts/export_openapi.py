"""Write the app's OpenAPI document to openapi.json (run by `make openapi`)."""

import json
import sys
from pathlib import Path

from app.main import create_app
from app.settings import Settings

ROOT = Path(__file__).resolve().parents[1]


def render() -> str:
    """The committed form of the spec: sorted keys, 2-space indent, trailing newline."""
    spec = create_app(Settings(agents_dir=ROOT / "agents")).openapi()
    return json.dumps(spec, indent=2, sort_keys=True) + "\n"


if __name__ == "__main__":
    target = ROOT / "openapi.json"
    target.write_text(render())
    sys.stdout.write(f"wrote {target}\n")
