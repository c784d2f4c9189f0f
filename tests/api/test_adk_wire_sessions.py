"""ADK wire parity of the session routes (issue 15): a create with `events` imports them, and the
bare session list is newest update first with the max page size as its cap.

Shapes are checked against the answers recorded from ADK 2.13's api_server
(`tests/data/adk-fixtures/`). In process on SQLite and PostgreSQL, and the import round trip (export
with GET, post back with `events`, read back equal) over real HTTP on both.
"""

import asyncio
import copy
import json
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from app.db.engine import create_db_engine
from app.main import create_app
from app.security.api_keys import ApiKeyService
from app.settings import Settings
from tests.adk_fixtures import adk_fixture as fixture
from tests.live_server import LiveServer, build_agents_dir
from tests.pgserver import PostgresServer
from tests.problems import assert_problem

ROOT = Path(__file__).resolve().parents[2]
APP = "capital_agent"
BASE = f"/apps/{APP}/users/u1/sessions"


def recorded_history() -> dict[str, Any]:
    """ADK's session after three runs (13 events, state in two scopes, artifact deltas)."""
    return dict(fixture("get_session_with_history")["response"]["json"])


def without_seq(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The events as ADK writes them: agentd's `seq` removed."""
    return [{k: v for k, v in event.items() if k != "seq"} for event in events]


# -- create ----------------------------------------------------------------------------------


def test_create_session_answers_with_adks_session_keys(client: TestClient) -> None:
    recorded = fixture("create_session")
    response = client.post(recorded["request"]["path"], json=recorded["request"]["body"])
    assert response.status_code == 201
    body = response.json()
    adk = recorded["response"]["json"]
    assert list(body) == list(adk)
    assert {k: body[k] for k in ("id", "appName", "userId", "state", "events")} == {
        k: adk[k] for k in ("id", "appName", "userId", "state", "events")
    }


def test_create_with_adks_recorded_history_imports_every_event_as_recorded(
    client: TestClient,
) -> None:
    adk = recorded_history()
    response = client.post(
        BASE, json={"sessionId": "s1", "state": {"k": 1}, "events": adk["events"]}
    )
    assert response.status_code == 201, response.text
    assert response.headers["etag"] == '"13"'
    created = response.json()
    assert list(created) == list(adk)
    assert created["state"] == adk["state"]
    assert [e["seq"] for e in created["events"]] == list(range(1, 14))
    assert without_seq(created["events"]) == adk["events"]

    stored = client.get(f"{BASE}/s1").json()
    assert (
        stored["state"]
        == adk["state"]
        == {"k": 1, "x": 2, "last_country": "Canada", "user:visits": 3}
    )
    assert [e["seq"] for e in stored["events"]] == list(range(1, 14))
    # Every key of every event as ADK wrote it: ids, invocation ids, authors, timestamps,
    # contents, actions with their state and artifact deltas. (PostgreSQL's JSONB keeps the
    # keys in an order of its own; the create's answer has ADK's.)
    assert without_seq(stored["events"]) == adk["events"]
    assert [list(e) for e in without_seq(created["events"])] == [list(e) for e in adk["events"]]
    assert [
        e["actions"]["artifactDelta"] for e in stored["events"] if e["actions"]["artifactDelta"]
    ] == [
        {"notes.txt": 0},
        {"notes.txt": 1},
        {"notes.txt": 2},
    ]
    # The user's other sessions see the imported `user:` state.
    assert client.post(BASE, json={"sessionId": "s2"}).json()["state"] == {"user:visits": 3}


def _event(**fields: Any) -> dict[str, Any]:
    return {"author": "user", "invocationId": "e-1", "id": uuid.uuid4().hex, **fields}


@pytest.mark.parametrize(
    ("events", "problem_type", "loc"),
    [
        pytest.param(
            [_event(), _event(), _event(), _event(partial=True)],
            "invalid-request",
            ["body", "events", 3, "partial"],
            id="partial",
        ),
        pytest.param(
            [_event(), _event(id="same"), _event(id="same")],
            "invalid-request",
            ["body", "events", 2, "id"],
            id="repeated-id",
        ),
        pytest.param(
            [_event(), _event(id="x" * 129)],
            "invalid-request",
            ["body", "events", 1, "id"],
            id="long-id",
        ),
        pytest.param(
            [_event(), {"id": "no-author"}],
            "request-validation-failed",
            ["body", "events", 1, "author"],
            id="no-author",
        ),
        pytest.param(
            [_event(), _event(finishReason="NOT_A_REASON")],
            "request-validation-failed",
            ["body", "events", 1],
            id="unknown-enum",
        ),
        pytest.param(
            [_event(content={"parts": "text"})],
            "request-validation-failed",
            ["body", "events", 0, "content", "parts"],
            id="bad-content",
        ),
        pytest.param(
            [_event(), _event(actions={"artifactDelta": {"a.txt": "v1"}})],
            "request-validation-failed",
            ["body", "events", 1, "actions", "artifactDelta", "a.txt"],
            id="bad-artifact-delta",
        ),
        pytest.param(
            [_event(), _event(actions={"stateDelta": {"n": float("nan")}})],
            "unstorable-value",
            ["body", "events", 1, "actions", "stateDelta", "n"],
            id="nan-in-state-delta",
        ),
    ],
)
def test_an_invalid_imported_event_is_422_naming_it_and_nothing_is_stored(
    client: TestClient, events: list[dict[str, Any]], problem_type: str, loc: list[str | int]
) -> None:
    # Shared state before the bad event: none of it may be written either.
    first = copy.deepcopy(events)
    first[0]["actions"] = {"stateDelta": {"user:imported": True, "app:imported": True}}
    body = json.dumps({"sessionId": "doomed", "state": {"user:initial": 1}, "events": first})
    response = client.post(BASE, content=body, headers={"content-type": "application/json"})
    assert_problem(response, 422, problem_type)
    assert response.json()["errors"][0]["loc"][: len(loc)] == loc
    assert_problem(client.get(f"{BASE}/doomed"), 404, "session-not-found")
    assert client.post(BASE, json={"sessionId": "after"}).json()["state"] == {}


@pytest.fixture
def small_limits(api_settings: Settings) -> Iterator[TestClient]:
    """A client of an app whose events and state are limited to a few KiB."""
    settings = api_settings.model_copy(update={"max_event_bytes": 2048, "max_state_bytes": 4096})
    with TestClient(create_app(settings)) as test_client:
        yield test_client


def test_an_imported_event_or_state_over_the_limits_is_413_naming_it_and_nothing_is_stored(
    small_limits: TestClient,
) -> None:
    client = small_limits
    big_text = {"role": "model", "parts": [{"text": "x" * 4096}]}
    too_big = client.post(
        BASE, json={"sessionId": "s1", "events": [_event(), _event(content=big_text)]}
    )
    assert_problem(too_big, 413, "event-too-large")
    assert too_big.json()["errors"][0]["loc"] == ["body", "events", 1]
    deltas = [{"a": "x" * 1500}, {"b": "x" * 1500}, {"c": "x" * 1500}, {"d": 1}]
    over = client.post(
        BASE,
        json={"sessionId": "s1", "events": [_event(actions={"stateDelta": d}) for d in deltas]},
    )
    assert_problem(over, 413, "state-too-large")
    assert over.json()["errors"][0]["loc"] == ["body", "events", 2, "actions", "stateDelta"]
    assert_problem(client.get(f"{BASE}/s1"), 404, "session-not-found")


def test_importing_app_state_takes_an_admin_as_writing_it_does(
    api_settings: Settings, tmp_path: Path
) -> None:
    settings = api_settings.model_copy(
        update={"auth": "api_key", "agents_dir": build_agents_dir(tmp_path / "agents")}
    )

    async def alices_key() -> str:
        engine = create_db_engine(settings.resolved_database_url)
        key = await ApiKeyService(engine).create(name="alice", apps=[APP], user_id="alice")
        await engine.dispose()
        return key.token

    alice = {"X-API-Key": asyncio.run(alices_key())}
    base = f"/apps/{APP}/users/alice/sessions"
    events = [_event(), _event(actions={"stateDelta": {"app:motd": "mine"}})]
    with TestClient(create_app(settings)) as client:
        refused = client.post(base, json={"sessionId": "s1", "events": events}, headers=alice)
        assert_problem(refused, 403, "forbidden")
        assert_problem(client.get(f"{base}/s1", headers=alice), 404, "session-not-found")
        user_only = [_event(actions={"stateDelta": {"user:lang": "fr"}})]
        created = client.post(base, json={"sessionId": "s1", "events": user_only}, headers=alice)
        assert created.status_code == 201
        assert created.json()["state"] == {"user:lang": "fr"}


def test_an_import_into_a_taken_id_is_409_and_changes_nothing(client: TestClient) -> None:
    client.post(BASE, json={"sessionId": "s1", "state": {"k": 1}})
    events = [_event(actions={"stateDelta": {"k": 2, "user:u": 1}})]
    taken = client.post(BASE, json={"sessionId": "s1", "events": events})
    assert_problem(taken, 409, "session-exists")
    kept = client.get(f"{BASE}/s1").json()
    assert kept["state"] == {"k": 1}
    assert kept["events"] == []


# -- list ------------------------------------------------------------------------------------


def test_list_sessions_answers_adks_shape_newest_update_first(client: TestClient) -> None:
    adk = fixture("list_sessions")["response"]["json"]
    # The requests behind ADK's list: s1, a generated id, then s2 by the legacy route.
    client.post(BASE, json={"sessionId": "s1", "state": {"k": 1}})
    generated = client.post(BASE).json()["id"]
    client.post(f"{BASE}/s2", json={"k": 2})
    response = client.get(BASE)
    assert response.status_code == 200
    listed = response.json()
    assert [list(s) for s in listed] == [list(s) for s in adk]
    assert all(s["events"] == [] for s in listed)
    # ADK lists oldest first (a documented difference): agentd lists the newest update first.
    assert [s["id"] for s in adk] == ["s1", adk[1]["id"], "s2"]
    assert [s["id"] for s in listed] == ["s2", generated, "s1"]
    assert [s["state"] for s in listed] == [{"k": 2}, {}, {"k": 1}]
    times = [s["lastUpdateTime"] for s in listed]
    assert times == sorted(times, reverse=True)
    assert "x-next-page-token" not in response.headers
    # An update moves a session to the front.
    client.patch(f"{BASE}/s1", json={"stateDelta": {"x": 2}})
    assert [s["id"] for s in client.get(BASE).json()] == ["s1", "s2", generated]


@pytest.fixture
def small_pages(api_settings: Settings) -> Iterator[TestClient]:
    """A client of an app whose pages hold at most 5 (by default 2 elsewhere)."""
    settings = api_settings.model_copy(update={"max_page_size": 5, "default_page_size": 2})
    with TestClient(create_app(settings)) as test_client:
        yield test_client


def test_list_sessions_default_cap_is_the_max_page_size_and_the_cursor_is_in_headers(
    small_pages: TestClient,
) -> None:
    client = small_pages
    ids = [f"s{i}" for i in range(7)]
    for sid in ids:
        client.post(BASE, json={"sessionId": sid})
    newest_first = list(reversed(ids))

    first = client.get(BASE)
    assert [s["id"] for s in first.json()] == newest_first[:5]
    token = first.headers["x-next-page-token"]
    link = first.headers["link"]
    assert link.endswith('>; rel="next"')
    assert f"pageToken={token}" in link
    second = client.get(BASE, params={"pageToken": token})
    assert [s["id"] for s in second.json()] == newest_first[5:]
    assert "x-next-page-token" not in second.headers
    assert "link" not in second.headers
    # A smaller page on request; a larger one is capped.
    assert len(client.get(BASE, params={"pageSize": 3}).json()) == 3
    assert len(client.get(BASE, params={"pageSize": 50}).json()) == 5
    # The events route keeps its own default page size.
    client.post(BASE, json={"sessionId": "busy"})
    for i in range(3):
        client.patch(f"{BASE}/busy", json={"stateDelta": {"i": i}})
    assert len(client.get(f"{BASE}/busy/events").json()["events"]) == 2


def test_list_sessions_walk_follows_link_headers_without_repeats(client: TestClient) -> None:
    ids = [f"s{i:02d}" for i in range(23)]
    for sid in ids:
        client.post(BASE, json={"sessionId": sid})
    seen: list[str] = []
    url: str | None = f"{BASE}?pageSize=5"
    while url is not None:
        response = client.get(url)
        seen += [s["id"] for s in response.json()]
        link = response.headers.get("link")
        url = link[1 : link.index(">")] if link else None
    assert seen == list(reversed(ids))


# -- the import round trip over real HTTP ----------------------------------------------------


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LiveServer]:
    """One server per backend (SQLite file, or a fresh PostgreSQL database), local blobs."""
    root = tmp_path_factory.mktemp(f"wire-sessions-{request.param}")
    if request.param == "sqlite":
        url = f"sqlite+aiosqlite:///{root / 'agentd.db'}"
    else:
        postgres: PostgresServer = request.getfixturevalue("postgres")
        url = postgres.create_database(f"wire_sessions_{uuid.uuid4().hex}")
    live = LiveServer(
        root,
        {
            "AGENTD_DATABASE_URL": url,
            "AGENTD_DATA_DIR": str(root / "data"),
            "AGENTD_AGENTS_DIR": str(build_agents_dir(root / "agents")),
            "AGENTD_RATE_LIMIT_PER_MINUTE": "0",
        },
    ).start()
    yield live
    live.stop()


def _run(http: httpx.Client, user: str, session_id: str, country: str) -> list[dict[str, Any]]:
    body = {
        "appName": APP,
        "userId": user,
        "sessionId": session_id,
        "newMessage": {"role": "user", "parts": [{"text": f"What is the capital of {country}?"}]},
    }
    response = http.post("/run", json=body)
    assert response.status_code == 200, response.text
    events: list[dict[str, Any]] = response.json()
    return events


def test_a_session_exported_with_get_and_posted_back_with_events_reads_back_equal(
    server: LiveServer,
) -> None:
    user = f"u-{uuid.uuid4().hex[:12]}"
    base = f"/apps/{APP}/users/{user}/sessions"
    with httpx.Client(base_url=server.url, timeout=60) as http:
        state = {"k": 1, "user:tier": "gold", "app:motd": f"hi {user}", "temp:scratch": 1}
        assert http.post(base, json={"sessionId": "s1", "state": state}).status_code == 201
        _run(http, user, "s1", "France")  # saves notes.txt v0, sets last_country, user:visits
        _run(http, user, "s1", "Germany")  # notes.txt v1
        patch = {"stateDelta": {"x": 2, "user:lang": "fr", f"app:seen-{user}": True}}
        assert http.patch(f"{base}/s1", json=patch).status_code == 200
        exported_response = http.get(f"{base}/s1")
        exported = exported_response.json()
        assert [
            e["actions"]["artifactDelta"]
            for e in exported["events"]
            if e["actions"]["artifactDelta"]
        ] == [
            {"notes.txt": 0},
            {"notes.txt": 1},
        ]
        assert exported["state"] == {
            "k": 1,
            "last_country": "Germany",
            "x": 2,
            "user:tier": "gold",
            "user:visits": 2,
            "user:lang": "fr",
            "app:motd": f"hi {user}",
            f"app:seen-{user}": True,
        }
        assert http.delete(f"{base}/s1").status_code in {200, 204}

        # Posted back under its own id, and once more beside it under another.
        for session_id in ("s1", "s1-copy"):
            body = {
                "sessionId": session_id,
                "state": exported["state"],
                "events": exported["events"],
            }
            created = http.post(base, json=body)
            assert created.status_code == 201, created.text
            assert created.json()["events"] == exported["events"]
            back_response = http.get(f"{base}/{session_id}")
            back = back_response.json()
            assert back["state"] == exported["state"]
            assert [e["id"] for e in back["events"]] == [e["id"] for e in exported["events"]]
            assert [e["seq"] for e in back["events"]] == list(range(1, len(exported["events"]) + 1))
            assert back["events"] == exported["events"]
            assert back_response.headers["etag"] == exported_response.headers["etag"]

        # The artifact deltas came back, the versions did not: no bytes were imported.
        assert http.get(f"{base}/s1/artifacts/notes.txt").status_code == 404
        # The imported session goes on where the export ended.
        more = _run(http, user, "s1", "Italy")
        after = http.get(f"{base}/s1").json()
        assert after["events"][: len(exported["events"])] == exported["events"]
        assert [e["id"] for e in after["events"][len(exported["events"]) :]][1:] == [
            e["id"] for e in more
        ]
        assert [e["seq"] for e in after["events"]] == list(range(1, len(after["events"]) + 1))
        assert after["state"]["last_country"] == "Italy"
        assert after["state"]["user:visits"] == 3


def _without_app_state(state: dict[str, Any]) -> dict[str, Any]:
    # The server is shared by the module's tests, and `app:` state by all of its users.
    return {k: v for k, v in state.items() if not k.startswith("app:")}


def test_an_invalid_import_over_real_http_is_422_and_nothing_is_stored(
    server: LiveServer,
) -> None:
    user = f"u-{uuid.uuid4().hex[:12]}"
    base = f"/apps/{APP}/users/{user}/sessions"
    events = [
        _event(actions={"stateDelta": {"user:imported": True, "k": 1}}),
        _event(),
        _event(),
        _event(partial=True),
    ]
    with httpx.Client(base_url=server.url, timeout=60) as http:
        refused = http.post(base, json={"sessionId": "s1", "events": events})
        assert_problem(refused, 422, "invalid-request")
        assert refused.json()["errors"][0]["loc"] == ["body", "events", 3, "partial"]
        assert_problem(http.get(f"{base}/s1"), 404, "session-not-found")
        assert http.get(base).json() == []
        assert _without_app_state(http.post(base, json={"sessionId": "s2"}).json()["state"]) == {}


def test_concurrent_imports_of_one_id_store_one_session(server: LiveServer) -> None:
    user = f"u-{uuid.uuid4().hex[:12]}"
    base = f"/apps/{APP}/users/{user}/sessions"

    def post(n: int) -> int:
        events = [_event(id=f"ev-{n}-{i}", actions={"stateDelta": {"n": n}}) for i in range(20)]
        with httpx.Client(base_url=server.url, timeout=60) as http:
            return http.post(base, json={"sessionId": "s1", "events": events}).status_code

    with ThreadPoolExecutor(4) as pool:
        statuses = sorted(pool.map(post, range(4)))
    assert statuses == [201, 409, 409, 409]
    with httpx.Client(base_url=server.url, timeout=60) as http:
        stored = http.get(f"{base}/s1").json()
    (winner,) = {e["id"].split("-")[1] for e in stored["events"]}
    assert [e["id"] for e in stored["events"]] == [f"ev-{winner}-{i}" for i in range(20)]
    assert _without_app_state(stored["state"]) == {"n": int(winner)}
