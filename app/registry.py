"""The catalogue of apps: one sub-folder of the agents directory per app.

The invocation engine will load each app's agent tree from its folder; until then the catalogue
only answers which apps exist, which is what every session route needs to 404 an unknown app.
"""

import re
from dataclasses import dataclass
from pathlib import Path

from app.errors import AppNotFound

_APP_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")


@dataclass(frozen=True)
class AppInfo:
    """What the catalogue knows about an app without loading it."""

    name: str
    description: str = ""


class AppRegistry:
    """Apps found in the agents directory (re-scanned on each call: folders may be added live)."""

    def __init__(self, agents_dir: Path) -> None:
        self._agents_dir = agents_dir

    def list_apps(self) -> list[AppInfo]:
        """All apps, sorted by name."""
        if not self._agents_dir.is_dir():
            return []
        return [
            AppInfo(name=path.name, description=_description(path))
            for path in sorted(self._agents_dir.iterdir())
            if path.is_dir() and _APP_NAME.fullmatch(path.name) and not path.name.startswith("_")
        ]

    def require(self, app_name: str) -> AppInfo:
        """The app named `app_name`, or AppNotFound."""
        if _APP_NAME.fullmatch(app_name) and not app_name.startswith("_"):
            path = self._agents_dir / app_name
            if path.is_dir():
                return AppInfo(name=app_name, description=_description(path))
        raise AppNotFound(f"No app named {app_name!r}.")


def _description(path: Path) -> str:
    readme = path / "README.md"
    if not readme.is_file():
        return ""
    for line in readme.read_text(encoding="utf-8", errors="replace").splitlines():
        text = line.strip().lstrip("#").strip()
        if text:
            return text
    return ""
