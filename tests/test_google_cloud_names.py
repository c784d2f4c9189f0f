"""ADK's Google Cloud services import under their ADK paths, and constructing any of them raises."""

import importlib

import pytest

from app.artifacts.base import BaseArtifactService
from app.errors import AgentdError, GoogleCloudNotSupported
from app.memory.base import BaseMemoryService
from app.sessions.base import BaseSessionService

# (module, name, port): each name at its ADK module path and where ADK's package exports it.
CLOUD_NAMES: list[tuple[str, str, type]] = [
    ("app.artifacts.gcs_artifact_service", "GcsArtifactService", BaseArtifactService),
    ("app.sessions.vertex_ai_session_service", "VertexAiSessionService", BaseSessionService),
    ("app.memory.vertex_ai_memory_bank_service", "VertexAiMemoryBankService", BaseMemoryService),
    ("app.memory.vertex_ai_rag_memory_service", "VertexAiRagMemoryService", BaseMemoryService),
]
IDS = [name for _, name, _ in CLOUD_NAMES]


@pytest.mark.parametrize(("module", "name", "port"), CLOUD_NAMES, ids=IDS)
def test_cloud_name_is_exported_at_adks_paths_as_a_subclass_of_the_port(
    module: str, name: str, port: type
) -> None:
    cls = getattr(importlib.import_module(module), name)
    package = module.rsplit(".", 1)[0]
    assert getattr(importlib.import_module(package), name) is cls
    assert issubclass(cls, port)


@pytest.mark.parametrize(("module", "name", "port"), CLOUD_NAMES, ids=IDS)
def test_constructing_a_cloud_service_raises_google_cloud_not_supported(
    module: str, name: str, port: type
) -> None:
    del port
    cls = getattr(importlib.import_module(module), name)
    with pytest.raises(GoogleCloudNotSupported) as raised:
        cls(project="p", location="us-central1", bucket_name="b")
    with pytest.raises(GoogleCloudNotSupported):
        cls()
    error = raised.value
    assert isinstance(error, AgentdError)
    assert (error.type, error.status) == ("google-cloud-not-supported", 501)
    assert name in str(error.detail)
    assert "instead" in str(error.detail)
