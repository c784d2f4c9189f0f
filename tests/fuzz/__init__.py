"""What the schemathesis runs share: seed and size, the server, the resources they aim at.

Seed and size come from the environment, so a run is reproduced from the command line:
`AGENTD_FUZZ_SEED` (default 4242) seeds Hypothesis, `AGENTD_FUZZ_EXAMPLES` bounds the generated
requests per operation, `AGENTD_FUZZ_SCENARIOS` and `AGENTD_FUZZ_STEPS` bound the stateful run.
`make test` runs the small defaults; `make fuzz` a larger run.

Random ids address nothing, so most requests would only meet a 404: the stateless run pins every
path parameter to a resource the server really has (the app `capital_agent`, a session with an
artifact and an invocation), except where the operation would destroy it.
"""

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from schemathesis.config import SchemathesisConfig

from tests.live_server import LiveServer
from tests.shipped_apps import shipped_agents_dir

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "openapi.json"

SEED = int(os.environ.get("AGENTD_FUZZ_SEED", "4242"))
EXAMPLES = int(os.environ.get("AGENTD_FUZZ_EXAMPLES", "12"))
SCENARIOS = int(os.environ.get("AGENTD_FUZZ_SCENARIOS", "40"))
STEPS = int(os.environ.get("AGENTD_FUZZ_STEPS", "10"))

APP = "capital_agent"
USER = "u1"
SESSION = "s1"
ARTIFACT = "notes.md"
# What the delete operations get, so that they do not take the pinned resources with them.
DOOMED_SESSION = "s-deleted-by-fuzz"
DOOMED_ARTIFACT = "deleted-by-fuzz.md"
# create_session_with_id: 201 the first time, 409 session-exists after.
CREATED_SESSION = "s-created-by-fuzz"

QUESTION = {"role": "user", "parts": [{"text": "What is the capital of France?"}]}

# The google-genai schemas (Content, Part) admit values the library itself refuses: those are
# 4xx answers to schema-valid requests, not schema violations or server errors.
CHECKS = {"positive_data_acceptance": {"enabled": False}}


@dataclass(frozen=True)
class FuzzTarget:
    """A live server and the ids of the resources made for the run."""

    server: LiveServer
    invocation_id: str

    @property
    def url(self) -> str:
        """The server's base URL."""
        return self.server.url


def start_target(root: Path) -> FuzzTarget:
    """Start a server and give it a session with an artifact and a finished invocation."""
    server = LiveServer(
        root,
        {
            "AGENTD_DATA_DIR": str(root / "data"),
            "AGENTD_AGENTS_DIR": str(shipped_agents_dir(root / "agents")),
        },
    ).start()
    try:
        with httpx.Client(base_url=f"{server.url}/apps/{APP}/users/{USER}", timeout=30) as http:
            for session_id in (SESSION, DOOMED_SESSION):
                http.post("/sessions", json={"sessionId": session_id}).raise_for_status()
            for name in (ARTIFACT, DOOMED_ARTIFACT):
                http.put(
                    f"/sessions/{SESSION}/artifacts/{name}/content",
                    content=b"# notes\n",
                    headers={"content-type": "text/markdown"},
                ).raise_for_status()
            run = http.post(f"/sessions/{SESSION}/invocations", json={"newMessage": QUESTION})
            run.raise_for_status()
    except BaseException:
        server.stop()
        raise
    return FuzzTarget(server, run.headers["X-Invocation-Id"])


def stateless_config() -> SchemathesisConfig:
    """The seed, the checks, and the path parameters pinned to the resources `start_target` makes.

    The invocation id is not known before the server runs; the test pins it on each case.
    """
    data: dict[str, Any] = {
        "seed": SEED,
        "checks": CHECKS,
        "parameters": {
            "path.app_name": APP,
            "path.user_id": USER,
            "path.session_id": SESSION,
            "path.name": ARTIFACT,
            "path.version": 0,
        },
        "operations": [
            {
                "include-operation-id": "delete_session",
                "parameters": {"path.session_id": DOOMED_SESSION},
            },
            {
                "include-operation-id": "delete_artifact",
                "parameters": {"path.name": DOOMED_ARTIFACT},
            },
            {
                "include-operation-id": "create_session_with_id",
                "parameters": {"path.session_id": CREATED_SESSION},
            },
        ],
    }
    return SchemathesisConfig.from_dict(data)


def stateful_config() -> SchemathesisConfig:
    """The seed and the checks; the path parameters come from the spec's links.

    Only the links the spec documents: the links schemathesis would infer from this spec mostly
    guess (an invocation id from any event list), and they crowd out the documented chains.
    """
    inference_off: dict[str, Any] = {"stateful": {"inference": {"algorithms": []}}}
    # An upload (`PUT .../artifacts/{name}/content`) makes a deleted artifact exist again, but
    # schemathesis counts only a write to a prefix of `.../artifacts/{name}` as re-creating it:
    # delete, upload, list versions would be reported as a deleted artifact still served.
    after_delete: dict[str, Any] = {
        "include-path-regex": "/artifacts/\\{name\\}",
        "checks": {"use_after_free": {"enabled": False}},
    }
    return SchemathesisConfig.from_dict(
        {"seed": SEED, "checks": CHECKS, "phases": inference_off, "operations": [after_delete]}
    )
