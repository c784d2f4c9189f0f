"""The API's own description: `/openapi.json`, Swagger UI at `/docs`, ReDoc at `/redoc`.

FastAPI's built-in pages load Swagger UI and ReDoc from a CDN, so offline (or behind a firewall)
`/docs` is a blank page. These pages load the same scripts from this server instead: the files
come from the `fastapi-offline` package (MIT; it bundles swagger-ui-dist 5, Apache-2.0, and ReDoc 2,
MIT), served under `/docs/assets/` straight from its package data. Only its files are used: its
`FastAPIOffline` factory builds the app itself, and ours is built by `app.main`.

Both pages are sent with a Content-Security-Policy that lets them load only from this server, so
they never call out: ReDoc's sidebar always asks Redocly's CDN for its logo (refused, the image
hides itself).

The three routes are defined here rather than by FastAPI (the app is built with `openapi_url`,
`docs_url` and `redoc_url` off) so that `AGENTD_DOCS_AUTH=required` can put them behind the same
`authenticate` dependency as every other route. The assets and the OAuth2 redirect page stay open
either way: they are the generic Swagger UI and ReDoc files and say nothing about this API.
"""

from fastapi import APIRouter, FastAPI, Request
from fastapi.openapi.docs import (
    get_redoc_html,
    get_swagger_ui_html,
    get_swagger_ui_oauth2_redirect_html,
)
from fastapi.responses import HTMLResponse, JSONResponse
from fastapi.staticfiles import StaticFiles

from app.api.mount import mount_root

OPENAPI_PATH = "/openapi.json"
SWAGGER_PATH = "/docs"
REDOC_PATH = "/redoc"
OAUTH2_REDIRECT_PATH = "/docs/oauth2-redirect"
ASSETS_PATH = "/docs/assets"

# The package and folder that hold swagger-ui-bundle.js, swagger-ui.css, redoc.standalone.js and
# favicon.png (pyproject pins fastapi-offline below its next major; tests/api/test_docs_http.py
# fetches each file, so a moved file fails there first).
ASSETS_PACKAGE = ("fastapi_offline", "static")

# Inline script and styles: FastAPI's pages start the UI inline, and both UIs style inline.
# ReDoc builds its search worker from a blob.
PAGE_POLICY = (
    "default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; font-src 'self' data:; worker-src 'self' blob:; connect-src 'self'; "
    "frame-ancestors 'self'"
)

router = APIRouter(include_in_schema=False)
open_router = APIRouter(include_in_schema=False)


@router.get(OPENAPI_PATH)
async def openapi_document(request: Request) -> JSONResponse:
    """The OpenAPI document (as FastAPI serves it, `servers` naming a proxy's root path)."""
    app: FastAPI = request.app
    schema = app.openapi()
    root = mount_root(request)
    if root and root not in {server.get("url") for server in schema.get("servers", [])}:
        schema = {**schema, "servers": [{"url": root}, *schema.get("servers", [])]}
    return JSONResponse(schema)


@router.get(SWAGGER_PATH)
async def swagger_ui(request: Request) -> HTMLResponse:
    """Swagger UI on the OpenAPI document, its scripts served by this server."""
    app: FastAPI = request.app
    root = mount_root(request)
    page = get_swagger_ui_html(
        openapi_url=root + OPENAPI_PATH,
        title=f"{app.title} - Swagger UI",
        swagger_js_url=f"{root}{ASSETS_PATH}/swagger-ui-bundle.js",
        swagger_css_url=f"{root}{ASSETS_PATH}/swagger-ui.css",
        swagger_favicon_url=f"{root}{ASSETS_PATH}/favicon.png",
        oauth2_redirect_url=root + OAUTH2_REDIRECT_PATH,
        init_oauth=app.swagger_ui_init_oauth,
        swagger_ui_parameters=app.swagger_ui_parameters,
    )
    page.headers["Content-Security-Policy"] = PAGE_POLICY
    return page


@router.get(REDOC_PATH)
async def redoc(request: Request) -> HTMLResponse:
    """ReDoc on the OpenAPI document, its script served by this server (no web fonts)."""
    app: FastAPI = request.app
    root = mount_root(request)
    page = get_redoc_html(
        openapi_url=root + OPENAPI_PATH,
        title=f"{app.title} - ReDoc",
        redoc_js_url=f"{root}{ASSETS_PATH}/redoc.standalone.js",
        redoc_favicon_url=f"{root}{ASSETS_PATH}/favicon.png",
        with_google_fonts=False,
    )
    page.headers["Content-Security-Policy"] = PAGE_POLICY
    return page


@open_router.get(OAUTH2_REDIRECT_PATH)
async def swagger_ui_oauth2_redirect() -> HTMLResponse:
    """Where an OAuth2 login started from Swagger UI comes back to."""
    return get_swagger_ui_oauth2_redirect_html()


def mount_assets(app: FastAPI) -> None:
    """Serve the Swagger UI and ReDoc files from the installed package, under /docs/assets."""
    app.mount(ASSETS_PATH, StaticFiles(packages=[ASSETS_PACKAGE]), name="docs-assets")
