"""ADK wire parity over real HTTP: /version, /list-apps?detailed=true, and the routes that answer
200 `null` (DELETE session, DELETE artifact, PATCH memory), checked against the responses
recorded from ADK 2.13's api_server (`tests/data/adk-fixtures/`)."""

import platform
from collections.abc import Iterator

import httpx
import pytest

from app import __version__
from tests.adk_fixtures import adk_fixture as fixture
from tests.live_server import LiveServer
from tests.shipped_apps import shipped_agents_dir

SESSIONS = "/apps/capital_agent/users/u1/sessions"


@pytest.fixture(scope="module")
def http(tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    """A client of a live server with the shipped apps (capital_agent among them)."""
    root = tmp_path_factory.mktemp("wire")
    server = LiveServer(
        root,
        {
            "AGENTD_DATA_DIR": str(root / "data"),
            "AGENTD_AGENTS_DIR": str(shipped_agents_dir(root / "agents")),
        },
    ).start()
    with httpx.Client(base_url=server.url, timeout=30) as client:
        yield client
    server.stop()


def test_version_has_adks_keys_with_agentds_values_and_agentds_own_beside(
    http: httpx.Client,
) -> None:
    adk = fixture("version")["response"]["json"]
    body = http.get("/version").json()
    assert list(body)[: len(adk)] == list(adk)  # ADK's keys first, spelled as ADK spells them
    assert body["version"] == __version__
    assert body["language"] == "python"
    assert body["language_version"] == platform.python_version()
    assert body["adkCompatibility"] == "2.13.0"


def test_list_apps_detailed_writes_every_key_adk_writes(http: httpx.Client) -> None:
    (adk,) = fixture("list_apps_detailed")["response"]["json"]["apps"]
    apps = {app["name"]: app for app in http.get("/list-apps?detailed=true").json()["apps"]}
    capital = apps["capital_agent"]
    assert list(capital) == list(adk)
    assert capital["agents"] is None
    assert capital["isComputerUse"] is False
    assert capital["language"] == "python"
    # The root agent's own name and description, as ADK reads them from the loaded agent.
    assert capital["rootAgentName"] == "capital_agent"
    assert capital["description"].startswith("Answers questions about capital cities")
    assert all(list(app) == list(adk) for app in apps.values())


def test_patch_memory_answers_200_null_as_adk(http: httpx.Client) -> None:
    adk = fixture("add_session_to_memory")
    assert http.post(SESSIONS, json={"sessionId": "mem"}).status_code == 201
    response = http.patch("/apps/capital_agent/users/u1/memory", json={"sessionId": "mem"})
    assert response.status_code == adk["response"]["status"] == 200
    assert response.headers["content-type"] == adk["response"]["content_type"]
    assert response.text == adk["response"]["body"] == "null"


@pytest.mark.parametrize(
    ("name", "path"),
    [
        ("delete_session", f"{SESSIONS}/gone"),
        ("delete_artifact", f"{SESSIONS}/gone-artifact/artifacts/up.bin"),
    ],
)
def test_deletes_answer_200_null_as_adk(http: httpx.Client, name: str, path: str) -> None:
    adk = fixture(name)["response"]
    session = path.split("/sessions/")[1].split("/")[0]
    assert http.post(SESSIONS, json={"sessionId": session}).status_code == 201
    if "/artifacts/" in path:
        upload = {"filename": "up.bin", "artifact": {"inlineData": {"data": "AAEC"}}}
        assert http.post(f"{SESSIONS}/{session}/artifacts", json=upload).status_code == 201
    response = http.delete(path)
    assert response.status_code == adk["status"] == 200
    assert response.headers["content-type"] == adk["content_type"]
    assert response.text == adk["body"] == "null"
    # Deleting what is not there is a 404 problem (ADK answers 200 for a missing session).
    assert http.delete(path).status_code == 404
