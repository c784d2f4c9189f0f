"""/docs, /redoc and /openapi.json: served with their assets by agentd itself, and open or behind
credentials as AGENTD_DOCS_AUTH says (issue 28). tests/browser renders them offline."""

import asyncio
import re
from collections.abc import Iterator

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from app.api.docs import ASSETS_PATH
from app.db.engine import create_db_engine
from app.main import create_app
from app.security.api_keys import ApiKeyService
from app.settings import Settings
from tests.problems import assert_problem

DOCS = ["/docs", "/redoc", "/openapi.json"]
ASSETS = {
    "swagger-ui-bundle.js": "text/javascript",
    "swagger-ui.css": "text/css",
    "redoc.standalone.js": "text/javascript",
    "favicon.png": "image/png",
}


def _admin_key(settings: Settings) -> str:
    async def create() -> str:
        engine = create_db_engine(settings.resolved_database_url)
        token = (await ApiKeyService(engine).create(name="docs-reader", admin=True)).token
        await engine.dispose()
        return token

    return asyncio.run(create())


def _client(settings: Settings, **update: object) -> Iterator[TestClient]:
    with TestClient(create_app(settings.model_copy(update=update))) as client:
        yield client


@pytest.fixture
def open_docs(api_settings: Settings) -> Iterator[TestClient]:
    """AGENTD_AUTH=api_key with the docs left at their default (`open`)."""
    yield from _client(api_settings, auth="api_key")


@pytest.fixture
def guarded_docs(api_settings: Settings) -> Iterator[tuple[TestClient, str]]:
    """AGENTD_AUTH=api_key, AGENTD_DOCS_AUTH=required, and an admin key."""
    key = _admin_key(api_settings)
    for client in _client(api_settings, auth="api_key", docs_auth="required"):
        yield client, key


@pytest.mark.parametrize("path", DOCS)
def test_docs_are_open_by_default_while_every_route_needs_a_key(
    open_docs: TestClient, path: str
) -> None:
    assert open_docs.get(path).status_code == 200
    assert_problem(open_docs.get("/list-apps"), 401, "unauthenticated")


@pytest.mark.parametrize("path", DOCS)
def test_required_docs_answer_401_without_a_valid_key(
    guarded_docs: tuple[TestClient, str], path: str
) -> None:
    client, _ = guarded_docs
    assert_problem(client.get(path), 401, "unauthenticated")
    assert_problem(client.get(path, headers={"X-API-Key": "not-a-key"}), 401, "unauthenticated")


@pytest.mark.parametrize("path", DOCS)
def test_required_docs_answer_a_valid_key(guarded_docs: tuple[TestClient, str], path: str) -> None:
    client, key = guarded_docs
    assert client.get(path, headers={"X-API-Key": key}).status_code == 200
    assert client.get(path, headers={"Authorization": f"Bearer {key}"}).status_code == 200


def test_assets_stay_open_when_the_docs_are_required(
    guarded_docs: tuple[TestClient, str],
) -> None:
    client, _ = guarded_docs
    for name in ASSETS:
        assert client.get(f"{ASSETS_PATH}/{name}").status_code == 200


def test_the_served_document_is_the_apps_openapi(open_docs: TestClient) -> None:
    app = open_docs.app
    assert isinstance(app, FastAPI)
    assert open_docs.get("/openapi.json").json() == app.openapi()


@pytest.mark.parametrize(("name", "media_type"), ASSETS.items())
def test_each_asset_is_served_from_the_installed_package(
    open_docs: TestClient, name: str, media_type: str
) -> None:
    got = open_docs.get(f"{ASSETS_PATH}/{name}")
    assert got.status_code == 200
    assert got.headers["content-type"].startswith(media_type)
    assert len(got.content) > 1000


@pytest.mark.parametrize("path", ["/docs", "/redoc"])
def test_pages_load_only_from_this_server(open_docs: TestClient, path: str) -> None:
    page = open_docs.get(path)
    assert page.headers["content-type"].startswith("text/html")
    sources = re.findall(r'(?:src|href)="([^"]+)"', page.text)
    assert sources, page.text
    assert all(source.startswith(f"{ASSETS_PATH}/") for source in sources), sources
    policy = page.headers["content-security-policy"]
    assert "default-src 'self'" in policy
    assert "img-src 'self' data:" in policy


def test_swagger_ui_oauth2_redirect_page_is_served(open_docs: TestClient) -> None:
    page = open_docs.get("/docs/oauth2-redirect")
    assert page.status_code == 200
    assert "oauth2" in page.text


def test_links_keep_a_proxys_root_path(api_settings: Settings) -> None:
    with TestClient(create_app(api_settings), root_path="/agentd") as client:
        page = client.get("/docs").text
        assert f'src="/agentd{ASSETS_PATH}/swagger-ui-bundle.js"' in page
        assert "url: '/agentd/openapi.json'" in page
        assert client.get("/openapi.json").json()["servers"][0] == {"url": "/agentd"}
