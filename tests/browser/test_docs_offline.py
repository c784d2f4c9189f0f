"""`/docs` and `/redoc` render in headless Chromium with no network beyond loopback (issue 28).

Their scripts come from the server itself (app.api.docs), so the pages must render the
operations without one request leaving 127.0.0.1. The last test is the control: FastAPI's own
CDN-based page, under the same harness, is caught.
"""

import re
from collections.abc import Iterator

import pytest
from fastapi.openapi.docs import get_swagger_ui_html
from playwright.sync_api import Route, expect

from tests.browser.conftest import SERVER_NAME, OfflinePage
from tests.live_server import LiveServer

RENDER_MS = 30_000
#: ReDoc's sidebar footer always asks for this image; the docs pages' policy refuses it, and
#: ReDoc then hides the image.
REDOCLY_LOGO = "https://cdn.redoc.ly/redoc/logo-mini.svg"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """A server on SQLite with no apps (the docs describe the routes, not the apps)."""
    root = tmp_path_factory.mktemp("docs-offline")
    (root / "agents").mkdir()
    env = {"AGENTD_DATA_DIR": str(root / "data"), "AGENTD_AGENTS_DIR": str(root / "agents")}
    live = LiveServer(root / "server", env).start()
    yield live
    live.stop()


def address(server: LiveServer, path: str) -> str:
    """`path` on the server, under the name the browser maps to 127.0.0.1."""
    return f"http://{SERVER_NAME}:{server.port}{path}"


def test_swagger_ui_renders_the_operations_offline(
    server: LiveServer, offline_page: OfflinePage
) -> None:
    page = offline_page.page
    page.goto(address(server, "/docs"))
    expect(page.get_by_text("Create a session", exact=True)).to_be_visible(timeout=RENDER_MS)
    expect(page.locator(".opblock-summary-path", has_text="/run_sse")).to_be_visible()
    page.wait_for_load_state("networkidle")  # what the rendered page asks for after it, too
    assert offline_page.left_loopback == []
    assert offline_page.failed == []
    assert offline_page.refused == []


def test_redoc_renders_the_operations_offline(
    server: LiveServer, offline_page: OfflinePage
) -> None:
    page = offline_page.page
    page.goto(address(server, "/redoc"))
    heading = page.locator("h2", has_text=re.compile(r"^Create a session\s*$"))
    expect(heading).to_be_visible(timeout=RENDER_MS)
    page.wait_for_load_state("networkidle")
    assert offline_page.left_loopback == []
    assert offline_page.failed == []
    assert set(offline_page.refused) <= {REDOCLY_LOGO}


def test_the_harness_catches_a_page_that_loads_swagger_ui_from_a_cdn(
    server: LiveServer, offline_page: OfflinePage
) -> None:
    # FastAPI's default /docs page (what agentd served before), answered at a loopback URL.
    cdn_page = get_swagger_ui_html(openapi_url="/openapi.json", title="agentd").body

    def answer(route: Route) -> None:
        route.fulfill(body=bytes(cdn_page), content_type="text/html")

    page = offline_page.page
    page.route(address(server, "/cdn-docs"), answer)
    page.goto(address(server, "/cdn-docs"))
    assert offline_page.left_loopback, "the CDN requests were not seen"
    assert all("cdn.jsdelivr.net" in url for url in offline_page.left_loopback)
    assert offline_page.failed
    # The script never arrived, so nothing can render the operations.
    assert page.evaluate("typeof SwaggerUIBundle") == "undefined"
    assert page.get_by_text("Create a session", exact=True).count() == 0
