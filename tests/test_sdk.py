"""A Python SDK generated from openapi.json (openapi-python-client) drives a live server."""

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.live_server import LiveServer, build_agents_dir

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def sdk(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    """The client package, generated fresh from the committed spec."""
    out = tmp_path_factory.mktemp("sdk")
    subprocess.run(
        [
            str(BIN / "openapi-python-client"),
            "generate",
            "--path",
            str(ROOT / "openapi.json"),
            "--meta",
            "none",
            "--output-path",
            str(out / "agentd_client"),
        ],
        check=True,
        capture_output=True,
        env={**os.environ, "PATH": f"{BIN}:{os.environ.get('PATH', '')}"},
        timeout=300,
    )
    sys.path.insert(0, str(out))
    try:
        import agentd_client

        yield agentd_client
    finally:
        sys.path.remove(str(out))


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LiveServer, str]]:
    """A live server with API keys on, and a key for user alice."""
    root = tmp_path_factory.mktemp("sdk-server")
    env = {
        "AGENTD_DATA_DIR": str(root / "data"),
        "AGENTD_AGENTS_DIR": str(build_agents_dir(root / "agents")),
        "AGENTD_AUTH": "api_key",
    }
    subprocess.run(
        [sys.executable, "-m", "app", "migrate"],
        cwd=root,
        env={**os.environ, **env},
        check=True,
        capture_output=True,
    )
    created = subprocess.run(
        [sys.executable, "-m", "app", "keys", "create", "--name", "sdk", "--user", "alice"],
        cwd=root,
        env={**os.environ, **env},
        check=True,
        capture_output=True,
        text=True,
    )
    live = LiveServer(root, env).start()
    yield live, created.stdout.strip()
    live.stop()


@pytest.mark.usefixtures("sdk")
def test_generated_sdk_end_to_end(server: tuple[LiveServer, str]) -> None:
    from agentd_client import AuthenticatedClient
    from agentd_client.api.artifacts import download_artifact, upload_artifact_content
    from agentd_client.api.invocations import create_invocation
    from agentd_client.api.sessions import create_session, get_session, list_session_events
    from agentd_client.models import CreateInvocationRequest, CreateSessionRequest
    from agentd_client.types import File

    live, token = server
    client = AuthenticatedClient(base_url=live.url, token=token, raise_on_unexpected_status=True)
    with client as http:
        created = create_session.sync_detailed(
            app_name="capital_agent",
            user_id="alice",
            client=http,
            body=CreateSessionRequest.from_dict({"sessionId": "sdk"}),
        )
        assert created.status_code == 201
        request = CreateInvocationRequest.from_dict(
            {"newMessage": {"role": "user", "parts": [{"text": "What is the capital of Japan?"}]}}
        )
        result = create_invocation.sync(
            app_name="capital_agent", user_id="alice", session_id="sdk", client=http, body=request
        )
        assert result is not None
        result_dict: dict[str, Any] = result.to_dict()
        assert result_dict["invocation"]["status"] == "completed"
        final = result_dict["events"][-1]["content"]["parts"][0]["text"]
        assert final == "The capital of Japan is Tokyo."

        upload = upload_artifact_content.sync_detailed(
            app_name="capital_agent",
            user_id="alice",
            session_id="sdk",
            name="report.txt",
            client=http,
            body=File(payload=b"hello from the sdk", mime_type="text/plain"),
        )
        assert upload.status_code == 201
        downloaded = download_artifact.sync_detailed(
            app_name="capital_agent",
            user_id="alice",
            session_id="sdk",
            name="report.txt",
            client=http,
        )
        assert downloaded.status_code == 200
        assert downloaded.content == b"hello from the sdk"

        page = list_session_events.sync(
            app_name="capital_agent", user_id="alice", session_id="sdk", client=http
        )
        assert page is not None
        events = page.to_dict()["events"]
        assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
        assert events[-1]["actions"]["artifactDelta"] == {"report.txt": 0}
        session = get_session.sync(
            app_name="capital_agent", user_id="alice", session_id="sdk", client=http
        )
        assert session is not None
        assert session.to_dict()["state"]["last_country"] == "Japan"
