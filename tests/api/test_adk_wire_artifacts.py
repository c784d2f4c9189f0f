"""ADK wire parity of the artifact routes, on SQLite and PostgreSQL: a version saved from a text
Part reads back as `{"text": ...}` on the JSON routes (latest, `?version=`, `/versions/{v}`) and
its metadata has no `mimeType`, checked against the responses recorded from ADK 2.13's api_server
(`tests/data/adk-fixtures/`). The raw `/content` routes keep serving bytes."""

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from app.settings import Settings
from tests.adk_fixtures import adk_fixture as fixture

SESSION = "/apps/capital_agent/users/u1/sessions/s1"
NOTES = f"{SESSION}/artifacts/notes.txt"
#: What the recorded agent's callback saved to `notes.txt`, one version per run.
RECORDED_NOTES = ["France: Paris\n", "Germany: Berlin\n", "Canada: Ottawa\n"]
#: agentd's own ArtifactVersion keys, after ADK's.
AGENTD_KEYS = ["size", "sha256"]


def assert_like_adk_metadata(ours: dict[str, Any], adks: dict[str, Any]) -> None:
    """ADK's ArtifactVersion keys in ADK's order, then agentd's; equal values but the varying.

    `createTime` differs on every run. ADK's file store's `canonicalUri` is `file://<its root>/`
    plus the version's path and the file in that version's folder; agentd's is `artifact://` plus
    the same path.
    """
    assert list(ours) == [*adks, *AGENTD_KEYS]
    for key, value in adks.items():
        if key == "createTime":
            assert isinstance(ours[key], float)
        elif key == "canonicalUri":
            adk_path = value.split("<artifact_root>/", 1)[1].rsplit("/", 1)[0]
            assert ours[key] == f"artifact://{adk_path}"
        else:
            assert ours[key] == value, key


@pytest.fixture
def client(api_settings: Settings) -> Iterator[TestClient]:
    """Session `s1` with the three text versions of `notes.txt` the fixtures were recorded on."""
    with TestClient(create_app(api_settings)) as test_client:
        created = test_client.post(SESSION.rsplit("/", 1)[0], json={"sessionId": "s1"})
        assert created.status_code == 201, created.text
        for note in RECORDED_NOTES:
            body = {"filename": "notes.txt", "artifact": {"text": note}}
            saved = test_client.post(f"{SESSION}/artifacts", json=body)
            assert saved.status_code == 201, saved.text
            assert "mimeType" not in saved.json()  # as ADK's metadata of a text version
        yield test_client


@pytest.mark.parametrize(
    "name", ["get_artifact", "get_artifact_version_query", "get_artifact_version"]
)
def test_a_text_artifact_reads_back_as_a_text_part_on_every_json_route(
    client: TestClient, name: str
) -> None:
    recorded = fixture(name)
    response = client.get(recorded["request"]["path"])
    assert response.status_code == recorded["response"]["status"]
    assert response.headers["content-type"] == recorded["response"]["content_type"]
    assert response.json() == recorded["response"]["json"]


def test_version_numbers_of_a_text_artifact_are_adks(client: TestClient) -> None:
    recorded = fixture("list_artifact_versions")
    response = client.get(recorded["request"]["path"])
    assert response.status_code == recorded["response"]["status"]
    assert response.json() == recorded["response"]["json"]


def test_metadata_of_text_versions_has_no_mime_type_like_adks(client: TestClient) -> None:
    one = fixture("get_artifact_version_metadata")
    response = client.get(one["request"]["path"])
    assert response.status_code == one["response"]["status"]
    assert_like_adk_metadata(response.json(), one["response"]["json"])

    every = fixture("list_artifact_versions_metadata")
    response = client.get(every["request"]["path"])
    assert response.status_code == every["response"]["status"]
    ours, adks = response.json(), every["response"]["json"]
    assert len(ours) == len(adks)
    for our_version, adk_version in zip(ours, adks, strict=True):
        assert_like_adk_metadata(our_version, adk_version)


def test_saving_inline_data_answers_metadata_with_its_mime_type_like_adk(
    client: TestClient,
) -> None:
    recorded = fixture("save_artifact")
    request = recorded["request"]
    response = client.post(request["path"], json=request["body"])
    assert response.status_code == 201  # ADK answers 200: a creation is 201 in agentd
    assert_like_adk_metadata(response.json(), recorded["response"]["json"])
    loaded = client.get(f"{SESSION}/artifacts/up.bin").json()
    assert loaded == {"inlineData": request["body"]["artifact"]["inlineData"]}


def test_raw_content_routes_serve_a_text_version_as_utf8_bytes(client: TestClient) -> None:
    for path, note in [
        (f"{NOTES}/content", RECORDED_NOTES[-1]),
        (f"{NOTES}/versions/0/content", RECORDED_NOTES[0]),
    ]:
        response = client.get(path)
        assert response.status_code == 200
        assert response.headers["content-type"] == "text/plain; charset=utf-8"
        assert response.content == note.encode()
    empty = client.post(
        f"{SESSION}/artifacts", json={"filename": "e.txt", "artifact": {"text": ""}}
    )
    assert empty.status_code == 201
    response = client.get(f"{SESSION}/artifacts/e.txt/content")
    assert (response.status_code, response.content) == (200, b"")
    assert response.headers["content-type"] == "text/plain; charset=utf-8"


def test_a_note_a_tool_saves_during_run_reads_back_as_text(client: TestClient) -> None:
    # The shipped capital_agent's after-tool callback saves `notes.txt` with
    # tool_context.save_artifact, as the recorded agent does (its note has no trailing newline).
    created = client.post(SESSION.rsplit("/", 1)[0], json={"sessionId": "s2"})
    assert created.status_code == 201, created.text
    message = {"role": "user", "parts": [{"text": "What is the capital of France?"}]}
    run = {"appName": "capital_agent", "userId": "u1", "sessionId": "s2", "newMessage": message}
    assert client.post("/run", json=run).status_code == 200
    notes = NOTES.replace("/sessions/s1/", "/sessions/s2/")
    recorded = fixture("get_artifact")["response"]["json"]
    loaded = client.get(notes).json()
    assert list(loaded) == list(recorded)
    assert loaded == {"text": "France: Paris"}
    assert "mimeType" not in client.get(f"{notes}/versions/0/metadata").json()
