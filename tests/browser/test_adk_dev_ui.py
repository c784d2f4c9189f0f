"""ADK's own dev web UI, served by agentd at `/dev-ui/`, driven in headless Chromium (issue 29).

The bundle is google-adk 2.13.0's (`google/adk/cli/browser/`), which `make dev-venv` unpacks into
`.venv/adk-web` without its dependencies (google-adk cannot share this environment's pins);
AGENTD_ADK_WEB_DIR names another copy of that folder. Without it the test fails, saying how to
get it: it never skips.

One test walks what a user does: pick capital_agent, ask for the capital of France, look at the
State, Artifacts and Trace panes and the agent graph (Viz.js draws it in the page from the DOT of
`build_graph_image`), reload, and reopen the session from the session list. Every answer the page
gets is recorded: none may be a 5xx, and each 4xx must be one `ALLOWED_4XX` names with its reason.
"""

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from playwright.sync_api import Locator, Page, Response, expect

from tests.browser.conftest import SERVER_NAME, OfflinePage
from tests.live_server import PROJECT_ROOT, LiveServer
from tests.shipped_apps import shipped_agents_dir

RENDER_MS = 30_000
APP = "capital_agent"
QUESTION = "What is the capital of France?"
ANSWER = "The capital of France is Paris."
BUNDLE = PROJECT_ROOT / ".venv" / "adk-web" / "google" / "adk" / "cli" / "browser"

#: Paths the page asks for that agentd answers 4xx on purpose, and why the page is fine without.
ALLOWED_4XX = {
    # index.html links a stylesheet the bundle does not ship: a 404 under `adk web` too.
    "/dev-ui/prism-dark.css": "not in ADK's bundle",
    # ADK's YAML agent builder: agentd does not edit apps from the browser; the page then keeps
    # its edit button disabled, as it does under `adk web` for an app without root_agent.yaml.
    f"/dev/apps/{APP}/builder": "no agent builder",
    # agentd keeps no eval sets or results: the Evals tab then offers to create a first set,
    # which is what it shows under `adk web` for an app without any.
    f"/dev/apps/{APP}/eval_sets": "no evals",
    f"/dev/apps/{APP}/eval_results": "no evals",
}
#: The bundle's inlined CSS asks Google Fonts for its fonts and icon font; the harness aborts
#: them (nothing leaves loopback), and the page shows icon names as text instead.
GOOGLE_FONTS = "fonts.gstatic.com"


def adk_web_bundle() -> Path:
    """The dev UI bundle: AGENTD_ADK_WEB_DIR, else the copy `make dev-venv` unpacks."""
    configured = os.environ.get("AGENTD_ADK_WEB_DIR")
    folder = Path(configured) if configured else BUNDLE
    if not (folder / "index.html").is_file():
        pytest.fail(
            f"ADK's dev UI bundle is missing at {folder}: run `make dev-venv` (it unpacks "
            "google-adk's wheel into .venv/adk-web) or set AGENTD_ADK_WEB_DIR to the "
            "google/adk/cli/browser folder of a google-adk wheel."
        )
    return folder


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """A server on SQLite with the shipped apps and the dev UI bundle."""
    bundle = adk_web_bundle()
    root = tmp_path_factory.mktemp("adk-dev-ui")
    env = {
        "AGENTD_DATA_DIR": str(root / "data"),
        "AGENTD_AGENTS_DIR": str(shipped_agents_dir(root / "agents")),
        "AGENTD_DEV_UI_DIR": str(bundle),
    }
    live = LiveServer(root / "server", env).start()
    yield live
    live.stop()


@dataclass(frozen=True)
class Answer:
    """One response the page got."""

    method: str
    path: str
    status: int
    content_type: str


class Steps:
    """The page under test, its answers, and a screenshot per step under `folder`."""

    def __init__(self, offline: OfflinePage, folder: Path) -> None:
        self.offline = offline
        self.page: Page = offline.page
        self.folder = folder
        self.answers: list[Answer] = []
        self.shots: list[Path] = []
        self.page.on("response", self._record)

    def _record(self, response: Response) -> None:
        self.answers.append(
            Answer(
                response.request.method,
                urlsplit(response.url).path,
                response.status,
                response.headers.get("content-type", ""),
            )
        )

    def shot(self, name: str) -> None:
        """A screenshot of the page as it is now."""
        path = self.folder / f"{len(self.shots) + 1:02d}-{name}.png"
        self.page.screenshot(path=path)
        self.shots.append(path)

    def tab(self, name: str) -> Locator:
        """The side panel's tab `name`, opened."""
        self.page.get_by_role("tab", name=name, exact=True).click()
        return self.page.get_by_role("tabpanel")


def address(server: LiveServer, path: str) -> str:
    """`path` on the server, under the name the browser maps to 127.0.0.1."""
    return f"http://{SERVER_NAME}:{server.port}{path}"


def test_adk_dev_ui_chats_fills_its_panes_and_reopens_the_session(
    server: LiveServer, offline_page: OfflinePage, tmp_path: Path
) -> None:
    steps = Steps(offline_page, tmp_path)
    page = steps.page

    # 1. The page opens without the telemetry consent dialog; pick the app and ask.
    page.goto(address(server, "/dev-ui/"))
    expect(page.get_by_text("Select an agent to begin.")).to_be_visible(timeout=RENDER_MS)
    expect(page.get_by_text("Help Improve ADK!")).to_have_count(0)
    page.get_by_role("button", name="Select an app").click()
    page.get_by_text(APP, exact=True).click()
    message = page.get_by_placeholder("Type a message...")
    message.fill(QUESTION)
    message.press("Enter")
    expect(page.get_by_text(ANSWER)).to_be_visible(timeout=RENDER_MS)
    expect(page.get_by_text('get_capital_city("France")')).to_be_visible()
    session_id = parse_qs(urlsplit(page.url).query)["session"][0]
    steps.shot("answer")

    # 2. The agent graph: the page draws the DOT of build_graph_image as an SVG (Viz.js).
    graph = page.locator(".svg-graph-wrapper svg")
    expect(graph.locator("g.node", has_text=APP)).to_be_visible(timeout=RENDER_MS)
    expect(graph.locator("g.node", has_text="get_capital_city")).to_be_visible()
    steps.shot("graph")

    expect(steps.tab("State")).to_contain_text(re.compile(r'last_country\s*:\s*"France"'))
    steps.shot("state")

    artifacts = steps.tab("Artifacts")
    expect(artifacts).to_contain_text("notes.txt")
    expect(artifacts).to_contain_text("France: Paris")
    steps.shot("artifacts")

    # The Trace view: the invocation's spans as a tree (agent, model calls, tool call).
    page.get_by_role("radio", name="Traces").click()
    spans = page.locator(".trace-row .trace-label")
    expect(spans).to_have_text([APP, "call_llm", "get_capital_city", "call_llm"], timeout=RENDER_MS)
    steps.shot("trace")
    page.locator(".trace-row", has_text="get_capital_city").click()
    expect(page.get_by_role("tabpanel")).to_contain_text("execute_tool get_capital_city")
    steps.shot("span")

    # 3. A reload reopens the session of the URL; the session list reopens it from a fresh page.
    page.reload()
    page.get_by_role("radio", name="Events").click()  # the page keeps the last view across loads
    expect(page.get_by_text(ANSWER)).to_be_visible(timeout=RENDER_MS)
    steps.shot("reloaded")
    page.goto(address(server, f"/dev-ui/?app={APP}"))
    expect(message).to_be_visible(timeout=RENDER_MS)
    expect(page.get_by_text(ANSWER)).to_have_count(0)
    page.get_by_role("button", name="NEW SESSION", exact=True).click()  # the session list
    page.get_by_text(session_id).click()
    expect(page.get_by_text(ANSWER)).to_be_visible(timeout=RENDER_MS)
    expect(page.get_by_text(QUESTION).first).to_be_visible()
    assert parse_qs(urlsplit(page.url).query)["session"] == [session_id]
    expect(steps.tab("Artifacts")).to_contain_text("France: Paris", timeout=RENDER_MS)
    steps.shot("reopened")

    # 4. What the page was answered: no 5xx, only the 4xx listed with their reasons.
    assert [a for a in steps.answers if a.status >= 500] == []
    refused = [a for a in steps.answers if 400 <= a.status < 500]
    assert {a.path for a in refused} <= set(ALLOWED_4XX), refused
    assert all(a.content_type == "application/problem+json" for a in refused), refused
    assert {a.path for a in steps.answers if a.status == 200} >= {
        "/list-apps",
        "/config/telemetry",
        "/run_sse",
        f"/dev/apps/{APP}/build_graph_image",
        f"/dev/apps/{APP}/debug/trace/session/{session_id}",
        f"/apps/{APP}/users/user/sessions",
        f"/apps/{APP}/users/user/sessions/{session_id}",
        f"/apps/{APP}/users/user/sessions/{session_id}/artifacts/notes.txt/versions/0",
    }
    assert [e for e in offline_page.failed if e.startswith("script error")] == []
    assert {urlsplit(url).hostname for url in offline_page.left_loopback} <= {GOOGLE_FONTS}
    assert len(steps.shots) == 8
