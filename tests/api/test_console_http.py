"""The console's files over real HTTP (issue 29): the page at every deep link, its assets with
their types, a strict Content-Security-Policy, 404 `console-asset-not-found`, and no key needed
for the files while the API they call still wants one. tests/browser drives the page itself."""

import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from app.api.console import static_dir
from tests.live_server import LiveServer, build_agents_dir
from tests.problems import assert_problem

DEEP_LINKS = [
    "/console/",
    "/console/apps/capital_agent",
    "/console/apps/capital_agent/users/user/sessions",
    "/console/apps/capital_agent/users/user/sessions/s-1?invocation=e-1",
    "/console/no/such/view",
]
SCRIPT_TYPE = "text/javascript; charset=utf-8"


@pytest.fixture(scope="module")
def http(tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    """A client (no key) of a server with AGENTD_AUTH=api_key on the shipped apps."""
    root = tmp_path_factory.mktemp("console-http")
    env = {
        "AGENTD_DATA_DIR": str(root / "data"),
        "AGENTD_AGENTS_DIR": str(build_agents_dir(root / "agents")),
        "AGENTD_AUTH": "api_key",
    }
    server = LiveServer(root / "server", env).start()
    try:
        with httpx.Client(base_url=server.url, timeout=30) as client:
            yield client
    finally:
        server.stop()


def _policy(response: httpx.Response) -> dict[str, str]:
    directives = response.headers["content-security-policy"].split(";")
    return dict(d.strip().split(" ", 1) for d in directives if d.strip())


@pytest.mark.parametrize("path", ["/console", "/"])
def test_the_root_and_console_without_a_slash_redirect_to_the_page(
    http: httpx.Client, path: str
) -> None:
    response = http.get(path)
    assert response.status_code == 307
    assert response.headers["location"] == "/console/"


@pytest.mark.parametrize("path", DEEP_LINKS)
def test_every_view_path_answers_the_page_without_a_key(http: httpx.Client, path: str) -> None:
    response = http.get(path)
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/html; charset=utf-8"
    assert response.headers["cache-control"] == "no-cache"
    assert '<script type="module" src="/console/assets/main.js"></script>' in response.text


def test_the_page_runs_under_a_policy_without_inline_script_or_style(http: httpx.Client) -> None:
    response = http.get("/console/apps/capital_agent")
    policy = _policy(response)
    assert policy["default-src"] == "'self'"
    assert policy["script-src"] == "'self'"
    assert policy["style-src"] == "'self'"
    assert policy["frame-ancestors"] == "'none'"
    assert response.headers["x-content-type-options"] == "nosniff"
    # Nothing inline for the policy to refuse: no script body, no style attribute or element.
    assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", response.text)
    assert "style=" not in response.text
    assert "<style" not in response.text


def test_every_asset_is_served_with_its_type_and_the_policy(http: httpx.Client) -> None:
    assets = sorted(p.name for p in static_dir().iterdir() if p.name != "index.html")
    assert "main.js" in assets
    assert "console.css" in assets
    for name in assets:
        response = http.get(f"/console/assets/{name}")
        assert response.status_code == 200, name
        expected = SCRIPT_TYPE if name.endswith(".js") else "text/css; charset=utf-8"
        assert response.headers["content-type"] == expected, name
        assert response.headers["cache-control"] == "no-cache"
        assert "content-security-policy" in response.headers
        assert response.content == (static_dir() / name).read_bytes()


def test_every_module_the_page_imports_is_served(http: httpx.Client) -> None:
    # A module named in an import but missing would leave a blank page: follow every import.
    pending, seen = ["main.js"], set()
    while pending:
        name = pending.pop()
        seen.add(name)
        response = http.get(f"/console/assets/{name}")
        assert response.status_code == 200, name
        for imported in re.findall(r'from "\./([\w.-]+\.js)"', response.text):
            if imported not in seen:
                pending.append(imported)
    assert {"api.js", "sse.js", "router.js", "session.js", "trace.js"} <= seen


@pytest.mark.parametrize(
    "path",
    [
        "/console/assets/nope.js",
        "/console/assets/index.html",
        "/console/assets/",
        "/console/assets/x/main.js",
    ],
)
def test_a_missing_asset_is_a_404_problem_not_the_page(http: httpx.Client, path: str) -> None:
    assert_problem(http.get(path), 404, "console-asset-not-found")


def test_the_asset_route_never_leaves_the_static_folder(http: httpx.Client) -> None:
    escaped = http.get("/console/assets/%2e%2e/%2e%2e/api/console.py")
    assert_problem(escaped, 404, "console-asset-not-found")
    assert Path(static_dir(), "..", "..", "api", "console.py").resolve().is_file()


def test_the_api_the_console_calls_still_wants_a_key(http: httpx.Client) -> None:
    assert http.get("/console/").status_code == 200
    assert_problem(http.get("/list-apps"), 401, "unauthenticated")
    assert_problem(http.get("/apps/capital_agent/users/user/sessions"), 401, "unauthenticated")
