"""The recorded ADK 2.13 exchanges the wire tests compare agentd with, read from the copies in
`tests/data/adk-fixtures/` (their README says where they come from), so the suite needs nothing
beside this repository."""

import json
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).resolve().parent / "data" / "adk-fixtures"


def adk_fixture(name: str) -> dict[str, Any]:
    """The recorded exchange `<name>.json`: its request and response."""
    return dict(json.loads((FIXTURES / f"{name}.json").read_text()))
