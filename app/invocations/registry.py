"""The catalogue of apps: one sub-folder of the agents directory per app, loaded ADK-style.

An app folder holds `agent.py` (or is a package whose `__init__.py` or `agent.py` defines them)
with either `app = App(...)` or `root_agent = <agent>`, or, without either file, ADK's
`root_agent.yaml` (an agent config, built by `app.agents.config_agent_utils.from_config`; the
agents directory is then on the import path, so dotted names in it reach the app's modules as
`<app>.<module>.<attr>`, as with ADK's loader). Each app is imported once, under a private
module name (`agentd_app_<name>`), so app folders never shadow installed packages and relative
imports inside an app package work. A broken app fails with a clear `app-load-failed` problem
naming the app, the file (relative to its folder) and the error, never a server path (the log
has the whole error with its traceback, once per distinct failure); it stays a 500: a broken
app is the operator's to fix, not the client's.
"""

import importlib
import importlib.machinery
import importlib.util
import logging
import re
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from app.agents.base_agent import BaseAgent
from app.agents.config_agent_utils import describe_failure, from_config
from app.errors import AppLoadError, AppNotFound
from app.invocations.runner import App
from app.tools.base_toolset import BaseToolset

logger = logging.getLogger("agentd.apps")

# AppLoadError is re-exported: callers of the catalogue catch it from here.
__all__ = ["REQUIRE_TTL_SECONDS", "AppInfo", "AppLoadError", "AppRegistry"]

#: ADK's file name for an app made of agent config files.
ROOT_AGENT_CONFIG = "root_agent.yaml"

_APP_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")


@dataclass(frozen=True)
class AppInfo:
    """What the catalogue knows about an app without loading it."""

    name: str
    description: str = ""


#: How long `require` trusts a folder it saw: every request addresses an app, so checking the
#: disk each time is wasted work. A new folder is found at once; a removed one within this.
REQUIRE_TTL_SECONDS = 1.0


class AppRegistry:
    """Apps found in the agents directory (re-scanned per call: folders may be added live)."""

    def __init__(self, agents_dir: Path) -> None:
        self._agents_dir = agents_dir
        self._loaded: dict[str, App] = {}
        self._lock = threading.Lock()
        self._seen: dict[str, tuple[float, AppInfo]] = {}
        self._failures: dict[str, str] = {}

    def list_apps(self) -> list[AppInfo]:
        """All apps, sorted by name."""
        if not self._agents_dir.is_dir():
            return []
        return [
            AppInfo(name=path.name, description=_description(path))
            for path in sorted(self._agents_dir.iterdir())
            if path.is_dir() and _is_app_name(path.name)
        ]

    def require(self, app_name: str) -> AppInfo:
        """The app named `app_name`, or AppNotFound."""
        now = time.monotonic()
        seen = self._seen.get(app_name)
        if seen is not None and now - seen[0] < REQUIRE_TTL_SECONDS:
            return seen[1]
        if _is_app_name(app_name):
            path = self._agents_dir / app_name
            if path.is_dir():
                info = AppInfo(name=app_name, description=_description(path))
                self._seen[app_name] = (now, info)
                return info
        self._seen.pop(app_name, None)
        raise AppNotFound(f"No app named {app_name!r}.")

    def load(self, app_name: str) -> App:
        """The app's agent tree (imported once, then cached)."""
        self.require(app_name)
        with self._lock:
            if app_name not in self._loaded:
                try:
                    self._loaded[app_name] = self._import(app_name)
                except AppLoadError as exc:
                    self._log_failure(app_name, exc)
                    raise
                self._failures.pop(app_name, None)
            return self._loaded[app_name]

    def _log_failure(self, app_name: str, exc: AppLoadError) -> None:
        # The problem hides server paths; the operator's log keeps them. A broken app is loaded
        # again on every request, so each distinct failure is logged once.
        detail = str(exc.detail)
        if self._failures.get(app_name) != detail:
            self._failures[app_name] = detail
            logger.warning(
                "app %s in %s failed to load: %s",
                app_name,
                self._agents_dir / app_name,
                detail,
                exc_info=exc.__cause__ or exc,
            )

    async def close(self) -> None:
        """Close the toolsets of every loaded app's agents (MCP sessions, their subprocesses);
        one that fails to close is logged, the others still close."""
        with self._lock:
            apps = list(self._loaded.values())
        seen: set[int] = set()
        for app in apps:
            for agent in (app.root_agent, *app.root_agent.sub_agents_deep()):
                for tool in getattr(agent, "tools", ()):
                    if isinstance(tool, BaseToolset) and id(tool) not in seen:
                        seen.add(id(tool))
                        try:
                            await tool.close()
                        except Exception:
                            logger.exception("closing a toolset of app %s failed", app.name)

    def _import(self, app_name: str) -> App:
        folder = self._agents_dir / app_name
        config = folder / ROOT_AGENT_CONFIG
        if (
            not any((folder / f).is_file() for f in ("agent.py", "__init__.py"))
            and config.is_file()
        ):
            _on_import_path(self._agents_dir)
            return App(name=app_name, root_agent=from_config(config))
        package_name = f"agentd_app_{app_name}"
        try:
            package = _import_package(package_name, folder)
            module: ModuleType = package
            if (folder / "agent.py").is_file():
                module = importlib.import_module(f"{package_name}.agent")
        except Exception as exc:
            raise AppLoadError(
                f"Importing app {app_name!r} failed: {describe_failure(exc, folder.resolve())}"
            ) from exc
        for candidate in (module, package):
            app = getattr(candidate, "app", None)
            if isinstance(app, App):
                return app
            root_agent = getattr(candidate, "root_agent", None)
            if isinstance(root_agent, BaseAgent):
                return App(name=app_name, root_agent=root_agent)
        raise AppLoadError(
            f"App {app_name!r} defines neither `root_agent` (an agent) nor `app` (an App) "
            "in its agent.py or __init__.py."
        )


def _import_package(package_name: str, folder: Path) -> ModuleType:
    if package_name in sys.modules:
        return sys.modules[package_name]
    init = folder / "__init__.py"
    if init.is_file():
        spec = importlib.util.spec_from_file_location(
            package_name, init, submodule_search_locations=[str(folder)]
        )
    else:
        spec = importlib.machinery.ModuleSpec(package_name, None, is_package=True)
        spec.submodule_search_locations = [str(folder)]
    if spec is None:
        raise ImportError(f"cannot import {folder}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[package_name] = module
    try:
        if spec.loader is not None:
            spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[package_name]
        raise
    return module


def _on_import_path(folder: Path) -> None:
    # Appended, not prepended: an app folder never shadows an installed package or the stdlib.
    entry = str(folder.resolve())
    if entry not in sys.path:
        sys.path.append(entry)


def _is_app_name(name: str) -> bool:
    return bool(_APP_NAME.fullmatch(name)) and not name.startswith("_")


def _description(path: Path) -> str:
    readme = path / "README.md"
    if not readme.is_file():
        return ""
    for line in readme.read_text(encoding="utf-8", errors="replace").splitlines():
        text = line.strip().lstrip("#").strip()
        if text:
            return text
    return ""
