"""agentd's web console at `/console/`: a single page (plain HTML, CSS and ES modules, no build
step) shipped in `app/console/static/` and served from the package data.

Every path under `/console/` that is not an asset answers the page itself, so a deep link (a
session, its trace) survives a reload or being shared: the page's router reads the path. The
assets live under `/console/assets/`; one that does not exist is a 404 `console-asset-not-found`
rather than the page, so a typo in a script's name fails loudly instead of parsing HTML as
JavaScript.

The files are open, like ADK's dev UI bundle (`app.api.dev_ui.files_router`): they carry no data
and a browser cannot attach an API key to a page load. The data comes from the API, which
authenticates every call; with auth on, the page asks for a key and keeps it in session storage.

The page runs under a strict Content-Security-Policy (only this server's scripts, no inline
script or style attribute, no framing): whatever the API returns is shown as text, and even a
mistake that inserted it as markup could not run. `Cache-Control: no-cache`: the file names
carry no version, so a browser asks again on each load and an upgrade never runs a stale mix of
modules (the files are small).
"""

from functools import lru_cache
from importlib.resources import files
from pathlib import Path

from fastapi import APIRouter, Request
from fastapi.responses import FileResponse, HTMLResponse, RedirectResponse

from app.api.json_body import JsonRoute
from app.api.mount import mount_root
from app.errors import NotFoundError

PATH = "/console"
ASSETS = f"{PATH}/assets"

#: Only this server's scripts, styles and data; artifact previews are `blob:` URLs the page makes
#: from bytes it fetched with its key.
POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' blob: data:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'"
)
HEADERS = {
    "Content-Security-Policy": POLICY,
    "Cache-Control": "no-cache",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}
#: Set here rather than guessed: Python's mimetypes answers differently per platform for `.js`.
CONTENT_TYPES = {
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
    ".png": "image/png",
}

files_router = APIRouter(route_class=JsonRoute, include_in_schema=False)


class ConsoleAssetNotFound(NotFoundError):
    """A path under `/console/assets/` that names no file of the console."""

    problem_type = "console-asset-not-found"
    default_title = "No such console asset."


@lru_cache(maxsize=1)
def static_dir() -> Path:
    """The folder of the console's files inside the installed package."""
    return Path(str(files("app.console") / "static")).resolve()


@lru_cache(maxsize=8)
def _index(root: str) -> str:
    # The page names its assets by absolute path (it is served at every depth under /console/);
    # behind a proxy that strips a prefix (ASGI root_path) those paths must carry it.
    page = (static_dir() / "index.html").read_text(encoding="utf-8")
    return page.replace(f'"{PATH}/', f'"{root}{PATH}/')


@files_router.get("/")
@files_router.get(PATH)
async def console_redirect(request: Request) -> RedirectResponse:
    """`/` and `/console` lead to the page (`/console/`): the console is always served, ADK's
    dev UI only with its bundle."""
    return RedirectResponse(f"{mount_root(request)}{PATH}/", status_code=307)


@files_router.get(ASSETS + "/{file_path:path}")
async def console_asset(file_path: str) -> FileResponse:
    """One of the console's scripts, its stylesheet or its icon."""
    folder = static_dir()
    target = (folder / file_path).resolve()
    # resolve() folds `..` and symlinks, so a path that leaves the folder is refused here.
    content_type = CONTENT_TYPES.get(target.suffix)
    if not target.is_relative_to(folder) or not target.is_file() or content_type is None:
        raise ConsoleAssetNotFound(f"The console has no asset {file_path!r}.")
    return FileResponse(target, media_type=content_type, headers=HEADERS)


@files_router.get(PATH + "/{view_path:path}")
async def console_page(request: Request) -> HTMLResponse:
    """The page, at `/console/` and at every view's deep link (its router reads the path)."""
    return HTMLResponse(_index(mount_root(request)), headers=HEADERS)
