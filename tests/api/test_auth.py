"""Authentication, tenancy, rate and size limits, CORS."""

import asyncio
import base64
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from fastapi.testclient import TestClient

from app.db.engine import create_db_engine
from app.main import create_app
from app.security.api_keys import ApiKeyService
from app.settings import Settings
from tests.live_server import build_agents_dir
from tests.problems import assert_problem

APP = "capital_agent"
QUESTION = {"role": "user", "parts": [{"text": "What is the capital of France?"}]}
SECRET = "s" * 40


def _keys(settings: Settings) -> dict[str, str]:
    async def create() -> dict[str, str]:
        engine = create_db_engine(settings.resolved_database_url)
        service = ApiKeyService(engine)
        made = {
            "alice": (await service.create(name="alice", apps=[APP], user_id="alice")).token,
            "bob": (await service.create(name="bob", apps=[APP], user_id="bob")).token,
            "service": (await service.create(name="backend", apps=[APP])).token,
            "admin": (await service.create(name="ops", admin=True)).token,
            "other_app": (await service.create(name="x", apps=["skip_agent"])).token,
        }
        revoked = await service.create(name="old", apps=[APP], user_id="alice")
        await service.revoke(revoked.id)
        made["revoked"] = revoked.token
        await engine.dispose()
        return made

    return asyncio.run(create())


@pytest.fixture
def keyed(api_settings: Settings, tmp_path: Path) -> Iterator[tuple[TestClient, dict[str, str]]]:
    """An app with AGENTD_AUTH=api_key and keys for alice, bob, a service and an admin."""
    settings = api_settings.model_copy(
        update={"auth": "api_key", "agents_dir": build_agents_dir(tmp_path / "agents")}
    )
    keys = _keys(settings)
    with TestClient(create_app(settings)) as client:
        yield client, keys


def _as(keys: dict[str, str], who: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {keys[who]}"}


def _seed_bob(client: TestClient, keys: dict[str, str]) -> None:
    bob = _as(keys, "bob")
    base = f"/apps/{APP}/users/bob/sessions"
    assert (
        client.post(base, json={"sessionId": "b1", "state": {"secret": 1}}, headers=bob).status_code
        == 201
    )
    assert (
        client.put(f"{base}/b1/artifacts/doc.txt/content", content=b"bob", headers=bob).status_code
        == 201
    )
    run = client.post(f"{base}/b1/invocations", json={"newMessage": QUESTION}, headers=bob)
    assert run.status_code == 200
    remembered = client.patch(
        f"/apps/{APP}/users/bob/memory", json={"sessionId": "b1"}, headers=bob
    )
    assert (remembered.status_code, remembered.json()) == (200, None)


def _bob_requests(iid: str) -> list[tuple[str, str, dict[str, Any]]]:
    base = f"/apps/{APP}/users/bob/sessions"
    msg = {"newMessage": QUESTION}
    run = {"appName": APP, "userId": "bob", "sessionId": "b1", "newMessage": QUESTION}
    return [
        ("GET", base, {}),
        ("POST", base, {"json": {"sessionId": "stolen"}}),
        ("POST", f"{base}/stolen2", {"json": {}}),
        ("GET", f"{base}/b1", {}),
        ("PATCH", f"{base}/b1", {"json": {"stateDelta": {"secret": 2}}}),
        ("DELETE", f"{base}/b1", {}),
        ("GET", f"{base}/b1/events", {}),
        ("GET", f"{base}/b1/artifacts", {}),
        ("POST", f"{base}/b1/artifacts", {"json": {"filename": "x", "artifact": {"text": "x"}}}),
        ("GET", f"{base}/b1/artifacts/doc.txt", {}),
        ("GET", f"{base}/b1/artifacts/doc.txt/content", {}),
        ("PUT", f"{base}/b1/artifacts/doc.txt/content", {"content": b"mine"}),
        ("GET", f"{base}/b1/artifacts/doc.txt/versions", {}),
        ("GET", f"{base}/b1/artifacts/doc.txt/versions/metadata", {}),
        ("GET", f"{base}/b1/artifacts/doc.txt/versions/0", {}),
        ("GET", f"{base}/b1/artifacts/doc.txt/versions/0/metadata", {}),
        ("GET", f"{base}/b1/artifacts/doc.txt/versions/0/content", {}),
        ("DELETE", f"{base}/b1/artifacts/doc.txt", {}),
        ("POST", f"{base}/b1/invocations", {"json": msg}),
        ("GET", f"{base}/b1/invocations", {}),
        ("GET", f"{base}/b1/invocations/{iid}", {}),
        ("POST", f"{base}/b1/invocations/{iid}/cancel", {}),
        ("GET", f"{base}/b1/invocations/{iid}/events", {}),
        ("PATCH", f"/apps/{APP}/users/bob/memory", {"json": {"sessionId": "b1"}}),
        ("GET", f"/apps/{APP}/users/bob/memory", {"params": {"query": "capital"}}),
        ("POST", "/run", {"json": run}),
        ("POST", "/run_sse", {"json": run}),
    ]


def _bob_snapshot(client: TestClient, keys: dict[str, str]) -> Any:
    service = _as(keys, "service")
    base = f"/apps/{APP}/users/bob/sessions"
    session = client.get(f"{base}/b1", headers=service).json()
    return (
        session["state"],
        [e["id"] for e in session["events"]],
        client.get(f"{base}/b1/artifacts/doc.txt/versions", headers=service).json(),
        client.get(base, headers=service).json(),
        [
            i["id"]
            for i in client.get(f"{base}/b1/invocations", headers=service).json()["invocations"]
        ],
    )


def test_a_user_bound_principal_never_reads_or_changes_another_users_data(
    keyed: tuple[TestClient, dict[str, str]],
) -> None:
    client, keys = keyed
    _seed_bob(client, keys)
    iid = client.get(
        f"/apps/{APP}/users/bob/sessions/b1/invocations", headers=_as(keys, "service")
    ).json()["invocations"][0]["id"]
    before = _bob_snapshot(client, keys)
    alice = _as(keys, "alice")
    for method, path, extra in _bob_requests(iid):
        response = client.request(method, path, headers=alice, **extra)
        assert response.status_code == 404, (method, path, response.status_code, response.text)
        assert response.headers["content-type"].startswith("application/problem+json")
    assert _bob_snapshot(client, keys) == before
    # Alice's own space works with the same key; another app's key sees nothing of this app.
    own = f"/apps/{APP}/users/alice/sessions"
    assert client.post(own, json={"sessionId": "a1"}, headers=alice).status_code == 201
    foreign = _as(keys, "other_app")
    assert_problem(client.get(f"{own}/a1", headers=foreign), 404, "app-not-found")
    assert client.get("/list-apps", headers=foreign).json() == ["skip_agent"]


@pytest.mark.parametrize("who", [None, "garbage", "revoked", "forged"])
def test_missing_invalid_or_revoked_credentials_get_401(
    keyed: tuple[TestClient, dict[str, str]], who: str | None
) -> None:
    client, keys = keyed
    _seed_bob(client, keys)
    headers: dict[str, str] = {}
    if who == "garbage":
        headers = {"Authorization": "Bearer not-a-key"}
    elif who == "revoked":
        headers = _as(keys, "revoked")
    elif who == "forged":
        key_id = keys["bob"].split("_")[1]
        headers = {"X-API-Key": f"agentd_{key_id}_{'x' * 43}"}
    for method, path, extra in [*_bob_requests("e-x"), ("GET", "/list-apps", {})]:
        response = client.request(method, path, headers=headers, **extra)
        assert_problem(response, 401, "unauthenticated")
        assert response.headers["www-authenticate"].startswith("Bearer")
    assert client.get("/health").status_code == 200  # probes stay open


def test_only_admins_write_app_state(keyed: tuple[TestClient, dict[str, str]]) -> None:
    client, keys = keyed
    base = f"/apps/{APP}/users/alice/sessions"
    alice, admin = _as(keys, "alice"), _as(keys, "admin")
    client.post(base, json={"sessionId": "a1"}, headers=alice)
    delta = {"stateDelta": {"app:motd": "hi"}}
    assert_problem(client.patch(f"{base}/a1", json=delta, headers=alice), 403, "forbidden")
    assert_problem(
        client.post(base, json={"sessionId": "a2", "state": {"app:x": 1}}, headers=alice),
        403,
        "forbidden",
    )
    run = {"appName": APP, "userId": "alice", "sessionId": "a1", "newMessage": QUESTION}
    assert_problem(
        client.post("/run", json={**run, "stateDelta": {"app:x": 1}}, headers=alice),
        403,
        "forbidden",
    )
    assert client.patch(f"{base}/a1", json=delta, headers=admin).status_code == 200
    assert client.get(f"{base}/a1", headers=alice).json()["state"]["app:motd"] == "hi"


def test_rate_limit_answers_429_with_retry_after(api_settings: Settings) -> None:
    settings = api_settings.model_copy(update={"auth": "api_key", "rate_limit_per_minute": 5})
    keys = _keys(settings)
    with TestClient(create_app(settings)) as client:
        statuses = [
            client.get("/list-apps", headers=_as(keys, "alice")).status_code for _ in range(6)
        ]
        assert statuses == [200] * 5 + [429]
        limited = client.get("/list-apps", headers=_as(keys, "alice"))
        assert_problem(limited, 429, "rate-limited")
        assert 1 <= int(limited.headers["retry-after"]) <= 60
        # Budgets are per principal.
        assert client.get("/list-apps", headers=_as(keys, "bob")).status_code == 200


def test_state_and_event_size_limits_answer_413(api_settings: Settings) -> None:
    settings = api_settings.model_copy(update={"max_state_bytes": 1000, "max_event_bytes": 2000})
    with TestClient(create_app(settings)) as client:
        base = f"/apps/{APP}/users/u/sessions"
        assert_problem(
            client.post(base, json={"sessionId": "big", "state": {"k": "x" * 1500}}),
            413,
            "state-too-large",
        )
        client.post(base, json={"sessionId": "s"})
        assert_problem(
            client.patch(f"{base}/s", json={"stateDelta": {"user:k": "y" * 2500}}),
            413,
            "event-too-large",
        )
        assert_problem(
            client.patch(f"{base}/s", json={"stateDelta": {"k": "z" * 1200}}),
            413,
            "state-too-large",
        )
        session = client.get(f"{base}/s").json()
        assert session["events"] == []
        assert session["state"] == {}


def _rsa_pair() -> tuple[Any, str]:
    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    public_pem = (
        private.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )
    return private, public_pem


def test_jwt_hs256_and_rs256_tokens_map_sub_to_the_user(
    api_settings: Settings, tmp_path: Path
) -> None:
    private, public_pem = _rsa_pair()
    jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(private.public_key()))
    jwks = tmp_path / "jwks.json"
    jwks.write_text(json.dumps({"keys": [{**jwk, "alg": "RS256", "kid": "k1", "use": "sig"}]}))
    settings = api_settings.model_copy(
        update={"auth": "jwt", "jwt_secret": SECRET, "jwt_jwks_file": jwks}
    )
    now = int(time.time())
    hs = jwt.encode({"sub": "alice", "exp": now + 60}, SECRET, algorithm="HS256")
    rs = jwt.encode(
        {"sub": "bob", "exp": now + 60}, private, algorithm="RS256", headers={"kid": "k1"}
    )
    expired = jwt.encode({"sub": "alice", "exp": now - 10}, SECRET, algorithm="HS256")
    no_exp = jwt.encode({"sub": "alice"}, SECRET, algorithm="HS256")
    wrong = jwt.encode({"sub": "alice", "exp": now + 60}, "w" * 40, algorithm="HS256")
    service = jwt.encode(
        {"sub": "backend", "exp": now + 60, "agentd_service": True}, SECRET, algorithm="HS256"
    )
    with TestClient(create_app(settings)) as client:
        alice_base = f"/apps/{APP}/users/alice/sessions"
        assert (
            client.post(alice_base, json={"sessionId": "a"}, headers=bearer(hs)).status_code == 201
        )
        assert (
            client.post(
                f"/apps/{APP}/users/bob/sessions", json={"sessionId": "b"}, headers=bearer(rs)
            ).status_code
            == 201
        )
        assert client.get(f"{alice_base}/a", headers=bearer(rs)).status_code == 404
        assert (
            client.get(f"/apps/{APP}/users/bob/sessions/b", headers=bearer(service)).status_code
            == 200
        )
        for token in (expired, no_exp, wrong, "a.b.c"):
            assert_problem(
                client.get(f"{alice_base}/a", headers=bearer(token)), 401, "unauthenticated"
            )
        # An alg=none token is never accepted.
        header = base64.urlsafe_b64encode(b'{"alg":"none","typ":"JWT"}').rstrip(b"=").decode()
        body = (
            base64.urlsafe_b64encode(json.dumps({"sub": "alice", "exp": now + 60}).encode())
            .rstrip(b"=")
            .decode()
        )
        assert_problem(
            client.get(f"{alice_base}/a", headers=bearer(f"{header}.{body}.")),
            401,
            "unauthenticated",
        )
    assert public_pem.startswith("-----BEGIN PUBLIC KEY-----")


def bearer(token: str) -> dict[str, str]:
    """An Authorization header."""
    return {"Authorization": f"Bearer {token}"}


def test_cors_allows_configured_origins_only(api_settings: Settings) -> None:
    settings = api_settings.model_copy(
        update={
            "cors_origins": ["https://chat.example"],
            "cors_origin_regex": r"https://.*\.corp\.example",
        }
    )
    with TestClient(create_app(settings)) as client:
        preflight = {"Origin": "https://chat.example", "Access-Control-Request-Method": "POST"}
        allowed = client.options(f"/apps/{APP}/users/u/sessions", headers=preflight)
        assert allowed.status_code == 200
        assert allowed.headers["access-control-allow-origin"] == "https://chat.example"
        regex = client.get("/list-apps", headers={"Origin": "https://a.corp.example"})
        assert regex.headers["access-control-allow-origin"] == "https://a.corp.example"
        other = client.get("/list-apps", headers={"Origin": "https://evil.example"})
        assert "access-control-allow-origin" not in other.headers


def test_no_rate_limit_without_authentication(api_settings: Settings) -> None:
    settings = api_settings.model_copy(update={"rate_limit_per_minute": 2})
    with TestClient(create_app(settings)) as client:
        assert [client.get("/list-apps").status_code for _ in range(5)] == [200] * 5
