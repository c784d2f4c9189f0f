"""ADK's dev web UI served at /dev-ui/ (issue 29): the bundle's files, its runtime-config, the
telemetry answers, and the 404 problem that says how to install it.

google-adk cannot be installed next to agentd's pins (it needs google-genai<3, opentelemetry-api
<=1.44, websockets<16), so these tests build a small bundle of their own (an index.html, a script
and an asset) and point AGENTD_DEV_UI_DIR at it, or lay it out as an installed `google.adk`
package to check the locator that finds it without importing google-adk.
"""

import asyncio
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.api.dev_ui import INSTALL_HINT, locate_bundle
from app.db.engine import create_db_engine
from app.main import create_app
from app.security.api_keys import ApiKeyService
from app.settings import Settings
from tests.problems import assert_problem

INDEX = '<!doctype html><html><head><base href="./"></head><body><app-root></app-root>'
INDEX += '<script src="main-TEST.js" type="module"></script></body></html>'
SCRIPT = "console.log('adk dev ui');"
ICON = '<svg xmlns="http://www.w3.org/2000/svg"/>'


def _write_bundle(folder: Path) -> Path:
    (folder / "assets").mkdir(parents=True)
    (folder / "index.html").write_text(INDEX)
    (folder / "main-TEST.js").write_text(SCRIPT)
    (folder / "assets" / "ADK-512-color.svg").write_text(ICON)
    return folder


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    """A bundle laid out like google/adk/cli/browser/."""
    return _write_bundle(tmp_path / "browser")


@pytest.fixture
def dev_ui(api_settings: Settings, bundle: Path) -> Iterator[TestClient]:
    """agentd with AGENTD_DEV_UI_DIR on the test bundle."""
    with TestClient(create_app(api_settings.model_copy(update={"dev_ui_dir": bundle}))) as client:
        yield client


@pytest.fixture
def no_dev_ui(api_settings: Settings) -> Iterator[TestClient]:
    """agentd with no bundle (google-adk is not installed in this environment)."""
    with TestClient(create_app(api_settings)) as client:
        yield client


def test_the_folder_serves_the_bundles_index(dev_ui: TestClient) -> None:
    page = dev_ui.get("/dev-ui/")
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    assert page.text == INDEX


@pytest.mark.parametrize(
    ("name", "body", "media_type"),
    [
        ("main-TEST.js", SCRIPT, "text/javascript"),
        ("assets/ADK-512-color.svg", ICON, "image/svg+xml"),
    ],
)
def test_the_bundles_files_are_served_with_their_type(
    dev_ui: TestClient, name: str, body: str, media_type: str
) -> None:
    got = dev_ui.get(f"/dev-ui/{name}")
    assert got.status_code == 200
    assert got.headers["content-type"].startswith(media_type)
    assert got.text == body


def test_the_bare_path_redirects_to_the_page(dev_ui: TestClient) -> None:
    got = dev_ui.get("/dev-ui", follow_redirects=False)
    assert got.status_code == 307
    assert got.headers["location"] == "/dev-ui/"
    assert dev_ui.get("/dev-ui").text == INDEX


def test_runtime_config_points_at_this_server_with_telemetry_off(dev_ui: TestClient) -> None:
    got = dev_ui.get("/dev-ui/assets/config/runtime-config.json")
    assert got.status_code == 200
    assert got.json() == {"backendUrl": "", "telemetry": False}


def test_telemetry_is_off_and_a_consent_answer_is_taken(dev_ui: TestClient) -> None:
    assert dev_ui.get("/config/telemetry").json() == {"telemetry": False}
    for choice in (True, False, None):
        got = dev_ui.post(
            "/config/telemetry",
            json={"telemetry": choice},
            headers={"X-ADK-Telemetry-Request": "true"},
        )
        assert got.status_code == 200
        assert got.json() == {"telemetry": False}


@pytest.mark.parametrize("name", ["missing.js", "assets", "%2e%2e/secret.txt"])
def test_a_path_outside_the_bundle_or_missing_is_a_404_problem(
    dev_ui: TestClient, bundle: Path, name: str
) -> None:
    (bundle.parent / "secret.txt").write_text("not served")
    assert_problem(dev_ui.get(f"/dev-ui/{name}"), 404, "not-found")


@pytest.mark.parametrize(
    "path", ["/dev-ui/", "/dev-ui/main-TEST.js", "/dev-ui/assets/config/runtime-config.json"]
)
def test_without_the_bundle_the_page_is_a_404_naming_the_extra(
    no_dev_ui: TestClient, path: str
) -> None:
    got = no_dev_ui.get(path)
    assert_problem(got, 404, "dev-ui-not-installed")
    assert got.json()["detail"] == INSTALL_HINT
    assert "pip install 'agentd[adk-web]'" in INSTALL_HINT


def test_an_installed_google_adk_is_found_without_being_imported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site-packages"
    (site / "google" / "adk").mkdir(parents=True)
    # Importing google.adk would raise: the locator must only find it.
    (site / "google" / "adk" / "__init__.py").write_text("raise RuntimeError('imported')\n")
    folder = _write_bundle(site / "google" / "adk" / "cli" / "browser")
    monkeypatch.syspath_prepend(str(site))
    locate_bundle.cache_clear()
    try:
        assert locate_bundle(None) == folder.resolve()
        assert "google.adk" not in sys.modules
    finally:
        locate_bundle.cache_clear()


def test_a_folder_without_index_is_no_bundle(tmp_path: Path) -> None:
    assert locate_bundle(tmp_path) is None


def _admin_key(settings: Settings) -> str:
    async def create() -> str:
        engine = create_db_engine(settings.resolved_database_url)
        token = (await ApiKeyService(engine).create(name="dev-ui", admin=True)).token
        await engine.dispose()
        return token

    return asyncio.run(create())


def test_with_auth_on_the_files_stay_open_and_telemetry_needs_a_key(
    api_settings: Settings, bundle: Path
) -> None:
    settings = api_settings.model_copy(update={"dev_ui_dir": bundle, "auth": "api_key"})
    key = _admin_key(settings)
    with TestClient(create_app(settings)) as client:
        assert client.get("/dev-ui/").status_code == 200
        assert client.get("/dev-ui/assets/config/runtime-config.json").status_code == 200
        assert_problem(client.get("/config/telemetry"), 401, "unauthenticated")
        got = client.get("/config/telemetry", headers={"X-API-Key": key})
        assert got.json() == {"telemetry": False}
