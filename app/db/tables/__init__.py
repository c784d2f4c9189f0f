"""All ORM tables; importing this package registers them on `Base.metadata`."""

from app.db.tables.artifacts import StorageArtifactCounter, StorageArtifactVersion
from app.db.tables.auth import StorageApiKey
from app.db.tables.invocations import StorageInvocation, StorageSessionLease
from app.db.tables.memory import StorageMemoryEntry
from app.db.tables.sessions import StorageAppState, StorageEvent, StorageSession, StorageUserState

__all__ = [
    "StorageApiKey",
    "StorageAppState",
    "StorageArtifactCounter",
    "StorageArtifactVersion",
    "StorageEvent",
    "StorageInvocation",
    "StorageMemoryEntry",
    "StorageSession",
    "StorageSessionLease",
    "StorageUserState",
]
