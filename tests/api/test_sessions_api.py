"""HTTP behaviour of the session routes, on SQLite and PostgreSQL."""

import asyncio
import time
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from app.db.engine import create_db_engine
from app.main import create_app
from app.sessions.database import DatabaseSessionService
from app.sessions.models import Event, EventActions
from app.settings import Settings
from tests.problems import PROBLEM, assert_problem

BASE = "/apps/capital_agent/users/u1/sessions"


def test_create_session_returns_201_with_adk_shape(client: TestClient) -> None:
    response = client.post(BASE, json={"sessionId": "s1", "state": {"k": 1}})
    assert response.status_code == 201
    body = response.json()
    assert list(body) == ["id", "appName", "userId", "state", "events", "lastUpdateTime"]
    assert body["id"] == "s1"
    assert body["state"] == {"k": 1}
    assert body["events"] == []
    assert response.headers["etag"] == '"0"'


def test_create_session_accepts_snake_case_and_no_body(client: TestClient) -> None:
    assert client.post(BASE, json={"session_id": "snake"}).json()["id"] == "snake"
    generated = client.post(BASE)
    assert generated.status_code == 201
    assert generated.json()["id"]
    legacy = client.post(f"{BASE}/legacy", json={"k": 2})
    assert legacy.status_code == 201
    assert legacy.json()["state"] == {"k": 2}


def test_duplicate_session_id_is_409(client: TestClient) -> None:
    client.post(BASE, json={"sessionId": "s1"})
    assert_problem(client.post(BASE, json={"sessionId": "s1"}), 409, "session-exists")
    assert_problem(client.post(f"{BASE}/s1"), 409, "session-exists")


def test_missing_session_is_404_on_every_route(client: TestClient) -> None:
    assert_problem(client.get(f"{BASE}/nope"), 404, "session-not-found")
    assert_problem(client.get(f"{BASE}/nope/events"), 404, "session-not-found")
    assert_problem(
        client.patch(f"{BASE}/nope", json={"stateDelta": {"a": 1}}), 404, "session-not-found"
    )
    assert_problem(client.delete(f"{BASE}/nope"), 404, "session-not-found")


def test_unknown_app_is_404(client: TestClient) -> None:
    for method, path in [
        ("POST", "/apps/nope/users/u1/sessions"),
        ("GET", "/apps/nope/users/u1/sessions"),
        ("GET", "/apps/nope/users/u1/sessions/s1"),
        ("GET", "/apps/..%2F..%2Fetc/users/u1/sessions"),
    ]:
        response = client.request(method, path)
        assert response.status_code == 404, (method, path)
        assert response.headers["content-type"].startswith(PROBLEM)


@pytest.mark.parametrize(
    ("body", "raw", "problem_type"),
    [
        (None, b'{"sessionId": ', "request-validation-failed"),
        (None, b"[1, 2", "request-validation-failed"),
        ({"sessionId": 5}, None, "request-validation-failed"),
        ({"state": "not-an-object"}, None, "request-validation-failed"),
        ({"sessionId": "../etc/passwd"}, None, "request-validation-failed"),
        # A NUL is refused before validation, as on every route (PostgreSQL cannot store it).
        ({"sessionId": "a\u0000b"}, None, "unstorable-value"),
    ],
)
def test_malformed_or_mistyped_body_is_422_problem(
    client: TestClient, body: object, raw: bytes | None, problem_type: str
) -> None:
    if raw is not None:
        response = client.post(BASE, content=raw, headers={"content-type": "application/json"})
    else:
        response = client.post(BASE, json=body)
    assert_problem(response, 422, problem_type)


@pytest.mark.parametrize(
    "path",
    [
        "/apps/capital_agent/users/%2E%2E/sessions",
        "/apps/capital_agent/users/u%0A1/sessions",
        "/apps/capital_agent/users/u%001/sessions",
        f"{BASE}/%2E%2E",
        f"{BASE}/s%09x",
        f"{BASE}/{'x' * 200}",
    ],
)
def test_ids_with_traversal_or_control_characters_are_rejected(
    client: TestClient, path: str
) -> None:
    response = client.get(path)
    assert response.status_code in (404, 422)
    assert response.headers["content-type"].startswith(PROBLEM)


def test_wrong_query_types_are_422(client: TestClient) -> None:
    client.post(BASE, json={"sessionId": "s1"})
    assert_problem(
        client.get(f"{BASE}/s1", params={"numRecentEvents": "many"}),
        422,
        "request-validation-failed",
    )
    assert_problem(
        client.get(f"{BASE}/s1/events", params={"order": "sideways"}),
        422,
        "request-validation-failed",
    )
    assert_problem(
        client.get(f"{BASE}/s1/events", params={"afterSeq": 10**30}),
        422,
        "request-validation-failed",
    )
    assert_problem(
        client.get(f"{BASE}/s1", params={"numRecentEvents": -1}), 422, "request-validation-failed"
    )
    huge_etag = '"' + "9" * 30 + '"'
    assert_problem(
        client.patch(f"{BASE}/s1", json={"stateDelta": {}}, headers={"If-Match": huge_etag}),
        422,
        "invalid-request",
    )
    assert_problem(client.get(BASE, params={"pageToken": "garbage!"}), 400, "invalid-page-token")


def test_list_sessions_pagination_is_stable_across_pages(client: TestClient) -> None:
    ids = [f"s{i:02d}" for i in range(25)]
    for sid in reversed(ids):
        client.post(BASE, json={"sessionId": sid})
    client.post("/apps/capital_agent/users/u2/sessions", json={"sessionId": "other-user"})
    seen: list[str] = []
    params: dict[str, str | int] = {"pageSize": 10}
    while True:
        response = client.get(BASE, params=params)
        assert response.status_code == 200
        page = response.json()
        assert isinstance(page, list)
        assert len(page) <= 10
        seen += [s["id"] for s in page]
        token = response.headers.get("x-next-page-token")
        if token is None:
            assert "link" not in response.headers
            break
        assert 'rel="next"' in response.headers["link"]
        params = {"pageSize": 10, "pageToken": token}
    assert seen == ids


def test_patch_records_state_delta_as_user_event_with_optimistic_check(
    client: TestClient,
) -> None:
    client.post(BASE, json={"sessionId": "s1", "state": {"k": 1}})
    response = client.patch(f"{BASE}/s1", json={"stateDelta": {"x": 2}})
    assert response.status_code == 200
    body = response.json()
    assert body["state"] == {"k": 1, "x": 2}
    (event,) = body["events"]
    assert event["author"] == "user"
    assert event["invocationId"].startswith("p-")
    assert event["actions"]["stateDelta"] == {"x": 2}
    assert event["seq"] == 1
    assert response.headers["etag"] == '"1"'

    stale = client.patch(f"{BASE}/s1", json={"stateDelta": {"x": 3}}, headers={"If-Match": '"0"'})
    assert_problem(stale, 409, "session-conflict")
    fresh = client.patch(f"{BASE}/s1", json={"stateDelta": {"x": 4}}, headers={"If-Match": '"1"'})
    assert fresh.status_code == 200
    assert fresh.json()["state"]["x"] == 4
    assert_problem(
        client.patch(f"{BASE}/s1", json={"stateDelta": {}}, headers={"If-Match": "bogus"}),
        422,
        "invalid-request",
    )
    assert_problem(client.patch(f"{BASE}/s1", json={"delta": {}}), 422, "request-validation-failed")


def test_delete_session_is_200_null_then_404(client: TestClient) -> None:
    client.post(BASE, json={"sessionId": "s1"})
    client.patch(f"{BASE}/s1", json={"stateDelta": {"x": 1}})
    response = client.delete(f"{BASE}/s1")
    assert response.status_code == 200  # ADK's answer: 200 with a JSON null body
    assert response.content == b"null"
    assert_problem(client.get(f"{BASE}/s1"), 404, "session-not-found")
    assert_problem(client.delete(f"{BASE}/s1"), 404, "session-not-found")


def test_events_route_pages_by_seq_in_both_orders(client: TestClient) -> None:
    client.post(BASE, json={"sessionId": "s1"})
    for i in range(5):
        client.patch(f"{BASE}/s1", json={"stateDelta": {"i": i}})

    def walk(**params: str | int) -> list[int]:
        seqs: list[int] = []
        query: dict[str, str | int] = {"pageSize": 2, **params}
        while True:
            body = client.get(f"{BASE}/s1/events", params=query).json()
            seqs += [e["seq"] for e in body["events"]]
            if "nextPageToken" not in body:
                return seqs
            query = {**query, "pageToken": body["nextPageToken"]}

    assert walk() == [1, 2, 3, 4, 5]
    assert walk(order="desc") == [5, 4, 3, 2, 1]
    assert walk(afterSeq=3) == [4, 5]


def test_get_session_with_5000_events_and_num_recent_events_returns_last_10(
    client: TestClient, api_settings: Settings
) -> None:
    client.post(BASE, json={"sessionId": "long"})

    async def seed() -> None:
        engine = create_db_engine(api_settings.resolved_database_url)
        service = DatabaseSessionService(engine)
        session = await service.get_session(
            app_name="capital_agent", user_id="u1", session_id="long"
        )
        assert session is not None
        for i in range(5000):
            event = Event(author="agent", actions=EventActions(state_delta={"i": i}))
            await service.append_event(session, event)
        await engine.dispose()

    started = time.monotonic()
    asyncio.run(seed())
    seeded_in = time.monotonic() - started
    response = client.get(f"{BASE}/long", params={"numRecentEvents": 10})
    assert response.status_code == 200, f"seeded in {seeded_in:.1f}s"
    events = response.json()["events"]
    assert [e["seq"] for e in events] == list(range(4991, 5001))
    assert [e["actions"]["stateDelta"]["i"] for e in events] == list(range(4990, 5000))
    assert response.json()["state"]["i"] == 4999


def test_body_over_the_limit_is_413(client: TestClient) -> None:
    big = {"sessionId": "big", "state": {"blob": "x" * (80 * 1024)}}
    assert_problem(client.post(BASE, json=big), 413, "payload-too-large")
    assert_problem(client.get(f"{BASE}/big"), 404, "session-not-found")

    def chunks() -> Iterator[bytes]:
        yield b'{"sessionId": "chunked", "state": {"blob": "'
        for _ in range(100):
            yield b"x" * 1024
        yield b'"}}'

    response = client.post(BASE, content=chunks(), headers={"content-type": "application/json"})
    assert_problem(response, 413, "payload-too-large")
    assert_problem(client.get(f"{BASE}/chunked"), 404, "session-not-found")


def test_health_readiness_version_and_list_apps(client: TestClient) -> None:
    assert client.get("/health").json() == {"status": "ok", "blobStore": "local"}
    assert client.get("/readyz").json() == {"status": "ready"}
    version = client.get("/version").json()
    assert version["version"]
    assert version["adkCompatibility"] == "2.13.0"
    apps = client.get("/list-apps").json()
    assert "capital_agent" in apps
    assert apps == sorted(apps)
    assert client.get("/list-apps", params={"relative_path": "./"}).json() == apps
    detailed = client.get("/list-apps", params={"detailed": "true"}).json()
    assert [a["name"] for a in detailed["apps"]] == apps
    assert_problem(client.get("/no/such/route"), 404, "http-not-found")
    assert_problem(client.put("/health"), 405, "http-method-not-allowed")


def test_get_session_is_bounded_by_max_session_events(api_settings: Settings) -> None:
    """A difference from ADK, on purpose: ADK's GET returns every event of the session; agentd
    returns the most recent AGENTD_MAX_SESSION_EVENTS (older ones page through `/events`)."""
    with TestClient(create_app(api_settings.model_copy(update={"max_session_events": 3}))) as http:
        http.post(BASE, json={"sessionId": "long"})
        for i in range(5):
            http.patch(f"{BASE}/long", json={"stateDelta": {"i": i}})
        events = http.get(f"{BASE}/long").json()["events"]
        assert [e["seq"] for e in events] == [3, 4, 5]
        page = http.get(f"{BASE}/long/events", params={"pageSize": 10}).json()["events"]
        assert [e["seq"] for e in page] == [1, 2, 3, 4, 5]
