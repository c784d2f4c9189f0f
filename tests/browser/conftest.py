"""Debian's Chromium driven by Playwright, with the network cut off beyond loopback.

Playwright's own browser download is never used (`playwright install` would fetch from a host
outside the package registries): the tests launch `/usr/bin/chromium` from Debian's `chromium`
package, which `.ci/run` installs when it is missing. Without it the tests fail, saying so; they
never skip.
"""

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import (
    Browser,
    BrowserContext,
    Error,
    Page,
    Request,
    Response,
    Route,
    sync_playwright,
)

CHROMIUM = Path("/usr/bin/chromium")
#: A name the browser resolves to 127.0.0.1. Pages are opened under it, as a deployment would
#: serve them: Swagger UI behaves differently on "localhost" and "127.0.0.1" (no validator badge).
SERVER_NAME = "agentd.test"
LOOPBACK = {"127.0.0.1", "localhost", "::1", SERVER_NAME}


# Module scope, not session: while Playwright's sync API is open it marks its event loop as running
# in this thread, so the suite's async tests could not start until it closes.
@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Headless Chromium (Debian's package); a failure, not a skip, when it is not installed."""
    if not CHROMIUM.exists():
        pytest.fail(
            f"{CHROMIUM} is missing: the browser tests need Debian's Chromium "
            "(`apt-get install -y chromium`; .ci/run installs it)."
        )
    # Chromium refuses to start its sandbox as root, which CI and this machine run as.
    args = [f"--host-resolver-rules=MAP {SERVER_NAME} 127.0.0.1"]
    if os.geteuid() == 0:
        args.append("--no-sandbox")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=args
        )
        yield browser
        browser.close()


@dataclass
class OfflinePage:
    """A page whose requests beyond loopback are aborted and recorded, with what went wrong
    (failed requests, 4xx/5xx answers, script errors)."""

    page: Page
    left_loopback: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    #: Requests the page's own Content-Security-Policy refused: never sent.
    refused: list[str] = field(default_factory=list)

    @classmethod
    def open(cls, context: BrowserContext) -> "OfflinePage":
        """A new page of `context`, every request of the context routed through the check."""
        offline = cls(context.new_page())
        context.route("**/*", offline._route)
        offline.page.on("requestfailed", offline._request_failed)
        offline.page.on("response", offline._response)
        offline.page.on("pageerror", offline._page_error)
        return offline

    def _route(self, route: Route) -> None:
        if urlsplit(route.request.url).hostname in LOOPBACK:
            route.continue_()
        else:
            self.left_loopback.append(route.request.url)
            route.abort("internetdisconnected")

    def _request_failed(self, request: Request) -> None:
        if request.failure == "csp":
            self.refused.append(request.url)
        else:
            self.failed.append(f"{request.url}: {request.failure}")

    def _response(self, response: Response) -> None:
        if response.status >= 400:
            self.failed.append(f"{response.url}: HTTP {response.status}")

    def _page_error(self, error: Error) -> None:
        self.failed.append(f"script error: {error}")


@pytest.fixture
def offline_page(browser: Browser) -> Iterator[OfflinePage]:
    """A fresh page in a context of its own, offline but for loopback."""
    context = browser.new_context()
    yield OfflinePage.open(context)
    context.close()
