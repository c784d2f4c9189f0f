"""ADK's own dev web UI (`adk web`'s Angular bundle) served by agentd at `/dev-ui/`.

The bundle is not ours: it ships inside google-adk (`google/adk/cli/browser/`), which the optional
extra `agentd[adk-web]` installs. Only its files are used, so the locator asks importlib where the
`google.adk` package lives (`find_spec`, which does not run `google/adk/__init__.py` and its heavy
imports) instead of importing it. AGENTD_DEV_UI_DIR names another folder instead (a bundle
unpacked from the wheel, e.g. when google-adk cannot share this environment's pins). Without
either, `/dev-ui/` answers 404 `dev-ui-not-installed` saying how to enable it.

The page asks `./assets/config/runtime-config.json` for its API base before it starts: the answer
here is the same origin (`backendUrl` empty, so it calls `/list-apps`, `/run_sse`, ... on this
server) with telemetry off, and `/config/telemetry` answers the same, so ADK's consent dialog never
covers the page (../shared/research/adk-dev-ui-routes.md lists every route the bundle calls).

Authentication: the bundle's files and its runtime-config are open, like the Swagger UI assets:
they are ADK's generic files plus a constant, say nothing about this server, and a browser loading
a page cannot attach an API key to it. `/config/telemetry` goes through `authenticate` like every
other route the page calls (`router` below; `files_router` is the open part).
"""

import importlib.util
from functools import lru_cache
from pathlib import Path
from typing import Literal

from fastapi import APIRouter, Request
from fastapi.responses import FileResponse, JSONResponse, RedirectResponse
from pydantic import BaseModel

from app.api.json_body import JsonRoute
from app.api.mount import mount_root
from app.errors import NotFoundError
from app.settings import Settings

PATH = "/dev-ui"
INSTALL_HINT = (
    "ADK's dev UI is not installed: install the extra (`pip install 'agentd[adk-web]'`, which "
    "brings google-adk for its web UI files) or set AGENTD_DEV_UI_DIR to a folder holding the "
    "bundle (google/adk/cli/browser/ of a google-adk wheel)."
)

# Same origin, no telemetry: what ADK's own server writes with no --url_prefix, with the consent
# already answered "no".
RUNTIME_CONFIG: dict[str, object] = {"backendUrl": "", "telemetry": False}

files_router = APIRouter(route_class=JsonRoute, include_in_schema=False)
router = APIRouter(include_in_schema=False)


class DevUiNotInstalled(NotFoundError):
    """No bundle of ADK's dev UI: google-adk is not installed and AGENTD_DEV_UI_DIR is unset."""

    problem_type = "dev-ui-not-installed"
    default_title = "ADK's dev UI is not installed."


class TelemetryChoice(BaseModel):
    """The consent ADK's dev UI posts (`{"telemetry": false}`); agentd never sends telemetry."""

    telemetry: bool | None = None


class TelemetryState(BaseModel):
    """Telemetry as ADK's dev UI reads it: always off here."""

    telemetry: Literal[False] = False


@lru_cache(maxsize=4)
def locate_bundle(configured: Path | None) -> Path | None:
    """The folder holding the bundle's `index.html`: AGENTD_DEV_UI_DIR, else google-adk's."""
    if configured is not None:
        folder = configured
    else:
        try:
            spec = importlib.util.find_spec("google.adk")
        except ImportError:  # not even the `google` namespace is installed
            return None
        if spec is None or not spec.submodule_search_locations:
            return None
        folder = Path(next(iter(spec.submodule_search_locations))) / "cli" / "browser"
    folder = folder.resolve()
    return folder if (folder / "index.html").is_file() else None


def _bundle(request: Request) -> Path:
    settings: Settings = request.app.state.settings
    folder = locate_bundle(settings.dev_ui_dir)
    if folder is None:
        raise DevUiNotInstalled(INSTALL_HINT)
    return folder


@files_router.get(PATH)
async def dev_ui_redirect(request: Request) -> RedirectResponse:
    """`/dev-ui` leads to the page, as under `adk web` (its assets load relative to it)."""
    return RedirectResponse(f"{mount_root(request)}{PATH}/", status_code=307)


@files_router.get(f"{PATH}/assets/config/runtime-config.json")
async def dev_ui_runtime_config(request: Request) -> JSONResponse:
    """Where the page finds its API: this server (same origin), telemetry off."""
    _bundle(request)
    return JSONResponse(RUNTIME_CONFIG)


@files_router.get(PATH + "/{file_path:path}")
async def dev_ui_file(request: Request, file_path: str) -> FileResponse:
    """A file of the bundle; the folder itself is its `index.html`."""
    folder = _bundle(request)
    target = (folder / (file_path or "index.html")).resolve()
    # resolve() folds `..` and symlinks, so a path that leaves the folder is refused here.
    if not target.is_relative_to(folder) or not target.is_file():
        raise NotFoundError(f"No file {file_path!r} in ADK's dev UI.")
    return FileResponse(target)


@router.get("/config/telemetry")
async def get_telemetry() -> TelemetryState:
    """Telemetry is off, so ADK's dev UI shows no consent dialog."""
    return TelemetryState()


@router.post("/config/telemetry")
async def set_telemetry(choice: TelemetryChoice) -> TelemetryState:  # noqa: ARG001
    """The dev UI's consent answer, taken and ignored: agentd sends no telemetry either way."""
    return TelemetryState()
