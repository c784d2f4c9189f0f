"""agentd's web console in headless Chromium (issue 29, acceptance 1, 2 and 4).

The console is driven as a person would: pick an app, start a session, send a message, watch the
answer stream in, then cancel a waiting invocation, approve a pending refund and open a trace.
Every step leaves a screenshot in the test's folder, and in `$AGENTD_SCREENSHOTS_DIR` when set
(`make screenshots` points it at docs/images, where the README's picture lives).
"""

import base64
import itertools
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import SERVER_NAME, OfflinePage
from tests.live_server import LiveServer, build_agents_dir, gated_app_env

UI_MS = 15_000
QUESTION = "What is the capital of France?"
ANSWER = "The capital of France is Paris."
SESSION_URL = re.compile(r"/console/apps/(\w+)/users/user/sessions/([^/?]+)$")
#: The invocation streams the console reads (POST .../invocations, GET .../{iid}/events). Chromium
#: reports a `no-store` fetch body read to its end as failed (ERR_ABORTED; microsoft/playwright
#: issue 42742), and a reload cuts an open one: neither is an error of the page, which shows each
#: stream's end (`done`) itself.
STREAM_ABORTED = re.compile(r"/invocations(/[^/]+/events)?: net::ERR_ABORTED$")
#: Records every text the timeline shows while it changes, so a test can tell that partial text
#: was on screen before the stored answer replaced it (each update is a new text node).
RECORD_TEXTS = """() => {
  window.__texts = [];
  new MutationObserver((records) => {
    for (const record of records) for (const node of record.addedNodes) {
      if (node.nodeType === Node.TEXT_NODE) window.__texts.push(node.data);
    }
  }).observe(document.querySelector('.timeline'), {childList: true, subtree: true});
}"""


def _agentd(env: dict[str, str], cwd: Path, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "app", *args],
        env={**os.environ, **env},
        cwd=cwd,
        check=True,
        capture_output=True,
        text=True,
    )
    return done.stdout.strip()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """A server (auth off) on the shipped apps and the test apps (gated_agent's gates)."""
    root = tmp_path_factory.mktemp("console")
    live = LiveServer(root / "server", gated_app_env(root, root / "gates")).start()
    yield live
    live.stop()


@pytest.fixture(scope="module")
def keyed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LiveServer, str]]:
    """A server with AGENTD_AUTH=api_key and one key for every app."""
    root = tmp_path_factory.mktemp("console-auth")
    env = {
        "AGENTD_DATA_DIR": str(root / "data"),
        "AGENTD_AGENTS_DIR": str(build_agents_dir(root / "agents")),
        "AGENTD_AUTH": "api_key",
    }
    _agentd(env, root, "migrate")
    key = _agentd(env, root, "keys", "create", "--name", "console")
    live = LiveServer(root / "server", env).start()
    yield live, key
    live.stop()


def address(server: LiveServer, path: str) -> str:
    """`path` on the server, under the name the browser maps to 127.0.0.1."""
    return f"http://{SERVER_NAME}:{server.port}{path}"


def shoot(page: Page, folder: Path, name: str) -> None:
    """A screenshot of the viewport in `folder`, and in $AGENTD_SCREENSHOTS_DIR when set."""
    page.screenshot(path=folder / name)
    shared = os.environ.get("AGENTD_SCREENSHOTS_DIR")
    if shared:
        Path(shared).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=Path(shared) / name)


def start_session(page: Page, server: LiveServer, app: str) -> str:
    """Opens the app's page, starts a new session and returns its id."""
    page.goto(address(server, f"/console/apps/{app}"))
    expect(page.get_by_role("heading", name=app)).to_be_visible(timeout=UI_MS)
    expect(page.get_by_label("User id")).to_have_value("user")
    page.get_by_role("button", name="New session").click()
    expect(page).to_have_url(SESSION_URL, timeout=UI_MS)
    match = SESSION_URL.search(page.url)
    assert match is not None
    expect(page.get_by_label("Message")).to_be_visible(timeout=UI_MS)
    return match.group(2)


def send(page: Page, text: str) -> None:
    page.get_by_label("Message").fill(text)
    page.get_by_role("button", name="Send").click()


def newest_invocation(page: Page, status: str) -> str:
    """Waits until the newest invocation shows `status` (as text) and returns its id."""
    item = page.locator(".invocation").first
    expect(item.locator(".badge")).to_have_text(status, timeout=UI_MS)
    iid = item.get_attribute("data-invocation-id")
    assert iid
    return iid


def unexpected(offline: OfflinePage, allowed: re.Pattern[str] | None = None) -> list[str]:
    """What went wrong on the page, but for the failures `allowed` matches."""
    return [f for f in offline.failed if allowed is None or not allowed.search(f)]


def test_console_streams_the_capital_answer_and_reopens_it_after_a_reload(
    server: LiveServer, offline_page: OfflinePage, tmp_path: Path
) -> None:
    page = offline_page.page
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(address(server, "/console"))
    expect(page.get_by_role("heading", name="Apps")).to_be_visible(timeout=UI_MS)
    shoot(page, tmp_path, "console-apps.png")
    page.get_by_role("link", name="capital_agent", exact=True).click()
    expect(page).to_have_url(address(server, "/console/apps/capital_agent"))
    sid = start_session(page, server, "capital_agent")

    page.evaluate(RECORD_TEXTS)
    send(page, QUESTION)
    expect(page.locator("#answer")).to_contain_text(ANSWER, timeout=UI_MS)
    expect(page.locator("#stream-status")).to_contain_text("ended: completed", timeout=UI_MS)
    texts: list[str] = page.evaluate("window.__texts")
    assert any(ANSWER.startswith(t) and t != ANSWER for t in texts if t), texts

    def check_session_view() -> None:
        expect(page.locator(".event", has_text=QUESTION)).to_be_visible(timeout=UI_MS)
        call = page.locator(".event details.call", has_text="get_capital_city")
        expect(call).to_be_visible(timeout=UI_MS)
        expect(page.locator(".event details.response", has_text="get_capital_city")).to_be_visible()
        expect(page.locator(".event .text", has_text=ANSWER)).to_be_visible()
        expect(page.locator(".state-delta")).to_contain_text('"last_country": "France"')
        expect(page.locator(".artifact-delta")).to_contain_text("notes.txt version 0")
        expect(page.locator("pre.state")).to_contain_text('"last_country": "France"')
        artifact = page.locator('.artifact[data-name="notes.txt"]')
        expect(artifact.locator(".versions")).to_contain_text("version 0")
        expect(artifact.locator(".artifact-text")).to_have_text("France: Paris", timeout=UI_MS)
        expect(page.locator(".invocation").first.locator(".badge")).to_have_text("completed")

    check_session_view()
    call = page.locator(".event details.call", has_text="get_capital_city")
    call.locator("summary").click()
    expect(call.locator("pre")).to_contain_text('"country": "France"')
    shoot(page, tmp_path, "console-session.png")

    page.reload()
    check_session_view()
    assert page.url.endswith(f"/console/apps/capital_agent/users/user/sessions/{sid}")

    # The trace view of the invocation: its agent, model and tool spans, nested.
    iid = newest_invocation(page, "completed")
    page.locator(".invocation").first.get_by_role("link", name="Trace").click()
    expect(page).to_have_url(re.compile(rf"\?invocation={iid}$"))
    trace = page.locator("ol.trace")
    expect(trace).to_be_visible(timeout=UI_MS)
    agent = trace.locator(".span-agent", has_text="invoke_agent capital_agent")
    expect(agent.locator(".span-model .span-name", has_text="call_llm").first).to_be_visible()
    expect(agent.locator(".span-tool .span-name")).to_have_text("execute_tool get_capital_city")
    shoot(page, tmp_path, "console-trace.png")
    page.go_back()
    expect(page.locator("ol.trace")).to_have_count(0, timeout=UI_MS)
    expect(page.locator(".event .text", has_text=ANSWER)).to_be_visible()

    # A phone's width: one column, nothing wider than the screen.
    page.set_viewport_size({"width": 390, "height": 844})
    expect(page.locator(".event .text", has_text=ANSWER)).to_be_visible()
    assert page.evaluate("document.scrollingElement.scrollWidth <= window.innerWidth")
    shoot(page, tmp_path, "console-phone.png")

    page.wait_for_load_state("networkidle")
    assert offline_page.left_loopback == []
    assert offline_page.refused == []
    assert unexpected(offline_page, STREAM_ABORTED) == []


def test_console_cancels_a_waiting_invocation_it_reconnected_to_after_a_reload(
    server: LiveServer, offline_page: OfflinePage, tmp_path: Path
) -> None:
    page = offline_page.page
    start_session(page, server, "gated_agent")
    send(page, "wait for the gate")
    iid = newest_invocation(page, "running")
    # The tool waits on its gate (never opened here) once the model's call is stored.
    expect(page.locator('.event[data-seq="2"] details.call')).to_contain_text("wait_for_gate")

    follow = f"/invocations/{iid}/events"
    with page.expect_request(lambda r: r.url.endswith(follow), timeout=UI_MS) as reconnect:
        page.reload()
    assert reconnect.value.headers.get("last-event-id") == "2"
    newest_invocation(page, "running")
    expect(page.locator("#stream-status")).to_contain_text(f"Following invocation {iid}")

    page.locator(".invocation").first.get_by_role("button", name="Cancel").click()
    assert newest_invocation(page, "cancelled") == iid
    expect(page.locator(".invocation").first).to_contain_text("invocation-cancelled")
    expect(page.locator(".invocation").first.get_by_role("button", name="Cancel")).to_have_count(0)
    shoot(page, tmp_path, "console-cancelled.png")

    page.wait_for_load_state("networkidle")
    assert offline_page.left_loopback == []
    assert unexpected(offline_page, STREAM_ABORTED) == []


def test_console_approves_a_pending_refund(
    server: LiveServer, offline_page: OfflinePage, tmp_path: Path
) -> None:
    page = offline_page.page
    start_session(page, server, "refund_agent")
    send(page, "refund 150 for order A1")
    newest_invocation(page, "requires_action")
    pending = page.locator(".invocation").first.locator(".pending-call")
    expect(pending).to_contain_text("confirmation needed: refund")
    expect(pending).to_contain_text('"order_id": "A1"')
    shoot(page, tmp_path, "console-approval.png")

    pending.get_by_role("button", name="Approve").click()
    newest_invocation(page, "completed")
    expect(page.locator(".pending-call")).to_have_count(0)
    expect(page.locator("pre.state")).to_contain_text('"order": "A1"', timeout=UI_MS)
    expect(page.locator(".event details.response", has_text="refund").last).to_be_visible()

    page.wait_for_load_state("networkidle")
    assert offline_page.left_loopback == []
    assert unexpected(offline_page, STREAM_ABORTED) == []


def test_console_denies_a_pending_refund(server: LiveServer, offline_page: OfflinePage) -> None:
    page = offline_page.page
    start_session(page, server, "refund_agent")
    # By keyboard: Enter sends the message, and the Deny button takes the focus and a key press.
    page.get_by_label("Message").fill("refund 500 for order B2")
    page.get_by_label("Message").press("Enter")
    newest_invocation(page, "requires_action")
    deny = page.locator(".pending-call").get_by_role("button", name="Deny")
    deny.focus()
    page.keyboard.press("Enter")
    newest_invocation(page, "completed")
    expect(page.locator(".pending-call")).to_have_count(0)
    expect(page.locator("pre.state")).to_have_text("{}")
    page.wait_for_load_state("networkidle")
    assert unexpected(offline_page, STREAM_ABORTED) == []


def test_console_lists_a_users_sessions_newest_first_in_pages_and_opens_one_by_id(
    server: LiveServer, offline_page: OfflinePage, tmp_path: Path
) -> None:
    sessions = "/apps/capital_agent/users/pager/sessions"
    for n in range(21):
        created = httpx.post(f"{server.url}{sessions}", json={"sessionId": f"p-{n:02}"})
        assert created.status_code == 201, created.text
    page = offline_page.page
    page.goto(address(server, "/console/apps/capital_agent"))
    page.get_by_label("User id").fill("pager")
    page.get_by_role("button", name="Show sessions").click()
    expect(page).to_have_url(address(server, f"/console{sessions}"))
    rows = page.locator("table.list tbody tr")
    expect(rows).to_have_count(20, timeout=UI_MS)
    expect(rows.first).to_contain_text("p-20")
    expect(rows.last).to_contain_text("p-01")
    shoot(page, tmp_path, "console-sessions.png")

    page.get_by_role("link", name="Next page").click()
    expect(page).to_have_url(re.compile(r"/sessions\?pageToken=."))
    expect(rows).to_have_count(1, timeout=UI_MS)
    page.reload()
    expect(rows).to_have_count(1, timeout=UI_MS)
    expect(rows.first).to_contain_text("p-00")

    page.get_by_label("Open session by id").fill("no-such-session")
    page.get_by_role("button", name="Open").click()
    expect(page.get_by_role("alert")).to_contain_text("session-not-found", timeout=UI_MS)
    page.get_by_label("Open session by id").fill("p-07")
    page.get_by_role("button", name="Open").click()
    expect(page).to_have_url(address(server, f"/console{sessions}/p-07"), timeout=UI_MS)
    expect(page.get_by_role("heading", name="Session p-07")).to_be_visible(timeout=UI_MS)
    assert offline_page.left_loopback == []
    not_found = re.compile(r"/no-such-session\?numRecentEvents=0: HTTP 404$")
    assert unexpected(offline_page, not_found) == []


#: A 1x1 PNG.
PIXEL_PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9aw"
    "AAAABJRU5ErkJggg=="
)


def test_console_previews_an_image_artifact_and_downloads_a_version(
    server: LiveServer, offline_page: OfflinePage
) -> None:
    session = f"{server.url}/apps/capital_agent/users/user/sessions/with-image"
    assert httpx.post(session.rsplit("/", 1)[0], json={"sessionId": "with-image"}).is_success
    for data in (PIXEL_PNG, PIXEL_PNG):  # two versions
        part = {"inlineData": {"mimeType": "image/png", "data": data}}
        saved = httpx.post(f"{session}/artifacts", json={"filename": "pixel.png", "artifact": part})
        assert saved.status_code == 201, saved.text
    page = offline_page.page
    page.goto(address(server, "/console/apps/capital_agent/users/user/sessions/with-image"))
    artifact = page.locator('.artifact[data-name="pixel.png"]')
    expect(artifact.locator(".versions li")).to_have_count(2, timeout=UI_MS)
    image = artifact.get_by_role("img", name="pixel.png, version 1")
    expect(image).to_be_visible(timeout=UI_MS)
    # The bytes came with the key and were shown from a blob: URL the page's policy allows.
    assert image.evaluate("img => img.complete && img.naturalWidth") == 1
    assert (image.get_attribute("src") or "").startswith("blob:")

    artifact.get_by_role("button", name="Preview v0").click()
    expect(artifact.get_by_role("img", name="pixel.png, version 0")).to_be_visible()
    with page.expect_download(timeout=UI_MS) as download:
        artifact.get_by_role("button", name="Download v0").click()
    assert download.value.suggested_filename == "pixel.png"
    assert download.value.path().read_bytes() == base64.b64decode(PIXEL_PNG)
    assert offline_page.refused == []
    assert unexpected(offline_page) == []


#: Feeds byte chunks to the console's SSE reader (its module, as the page loads it) and returns
#: the events it yields.
READ_EVENTS = """async (chunks) => {
  const { readEvents } = await import('/console/assets/sse.js');
  const encoder = new TextEncoder();
  const body = new ReadableStream({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(new Uint8Array(chunk));
      controller.close();
    },
  });
  const events = [];
  for await (const e of readEvents(body)) events.push({type: e.type, data: e.data, id: e.id});
  return events;
}"""


def _chunks(text: str, *cuts: int) -> list[list[int]]:
    """`text` as UTF-8 bytes cut at the given byte offsets (possibly inside a character)."""
    data = text.encode()
    bounds = [0, *cuts, len(data)]
    return [list(data[a:b]) for a, b in itertools.pairwise(bounds)]


def test_the_console_reads_server_sent_events_as_the_standard_says(
    server: LiveServer, offline_page: OfflinePage
) -> None:
    page = offline_page.page
    page.goto(address(server, "/console/"))
    expect(page.get_by_role("heading", name="Apps")).to_be_visible(timeout=UI_MS)
    stream = (
        "\ufeff: a comment (heartbeat)\r\n"
        'id: 1\r\nevent: event\r\ndata: {"a":\r\ndata: 1}\r\n\r\n'  # CRLF, two data lines
        "event: partial\rdata:no space é\r\r"  # CR only; the id persists; a split character
        "data\nid: 7\n\n"  # a field with no colon: an empty data line
        "id: 8\nevent: done\n\n"  # no data: nothing dispatched, the id still moves
        "data: last\n\n"
        "data: cut off without its blank line"
    )
    cut_in_cr_lf = stream.encode().index(b"\r\n\r\n") + 1
    cut_in_e_acute = stream.encode().index("é".encode()) + 1
    events = page.evaluate(READ_EVENTS, _chunks(stream, 3, cut_in_cr_lf, cut_in_e_acute))
    assert events == [
        {"type": "event", "data": '{"a":\n1}', "id": "1"},
        {"type": "partial", "data": "no space é", "id": "1"},
        {"type": "message", "data": "", "id": "7"},
        {"type": "message", "data": "last", "id": "8"},
    ]


def test_console_signs_in_with_a_key_it_keeps_in_session_storage_only(
    keyed: tuple[LiveServer, str], offline_page: OfflinePage, tmp_path: Path
) -> None:
    server, key = keyed
    page = offline_page.page
    page.goto(address(server, "/console/"))
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible(timeout=UI_MS)
    shoot(page, tmp_path, "console-signin.png")

    page.get_by_label("API key or token").fill("agentd_not_a_key")
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("alert")).to_contain_text("unauthenticated", timeout=UI_MS)
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()

    page.get_by_label("API key or token").fill(key)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", name="Apps")).to_be_visible(timeout=UI_MS)
    sid = start_session(page, server, "capital_agent")
    expect(page.get_by_role("heading", name=f"Session {sid}")).to_be_visible()
    page.reload()  # the key outlives a reload of the tab
    expect(page.get_by_role("heading", name=f"Session {sid}")).to_be_visible(timeout=UI_MS)

    assert page.evaluate("window.localStorage.length") == 0
    assert page.context.cookies() == []
    assert page.evaluate("window.sessionStorage.getItem('agentd.apiKey')") == key

    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible(timeout=UI_MS)
    assert page.evaluate("window.sessionStorage.length") == 0

    assert offline_page.left_loopback == []
    # Before a key (the first visit, the wrong key, and after signing out) the API said 401.
    assert unexpected(offline_page, re.compile(r": HTTP 401$")) == [], offline_page.failed
