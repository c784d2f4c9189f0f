"""Every statement on artifact versions and their version counters.

The artifact service runs these in its own units of work (allocation, reads, delete, garbage
collection checks); the session service calls `insert_versions` inside an event's transaction, so
a version row commits exactly with the event that names it. Methods take the session a call is
made through and map a `user:` name to the user scope themselves (`session_id = ''` in both
tables), so callers never spell the column encoding. Statements are built once at import and
registered with the fast path's plan cache; parameters are named `k_*` (keys in WHERE clauses),
apart from the counter upsert, whose INSERT binds the column names.
"""

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from sqlalchemy import Table, bindparam, delete, exists, insert, select
from sqlalchemy.dialects import postgresql, sqlite

from app.db.repositories.sessions import SESSION_PK
from app.db.sqlite import register
from app.db.tables import StorageArtifactCounter, StorageArtifactVersion
from app.db.tables.artifacts import USER_SCOPE
from app.db.tables.sessions import session_key
from app.db.uow import Db

if TYPE_CHECKING:
    from app.sessions.base import NewArtifactVersion

_versions = cast(Table, StorageArtifactVersion.__table__)
_counters = cast(Table, StorageArtifactCounter.__table__)

#: The name prefix of user-scoped artifacts (`app.artifacts.models.USER_PREFIX`; the layers keep
#: this package from importing it).
_USER_PREFIX = "user:"


def _of_name() -> tuple[Any, ...]:
    return (
        _versions.c.app_name == bindparam("k_app"),
        _versions.c.user_id == bindparam("k_user"),
        _versions.c.session_id == bindparam("k_scope"),
        _versions.c.name == bindparam("k_name"),
    )


_INSERT_VERSION = register(insert(_versions))
_LATEST_VERSION = register(
    select(_versions).where(*_of_name()).order_by(_versions.c.version.desc()).limit(1)
)
_EXACT_VERSION = register(
    select(_versions).where(*_of_name(), _versions.c.version == bindparam("k_version"))
)
_VERSIONS = register(select(_versions).where(*_of_name()).order_by(_versions.c.version))
_DELETE_VERSIONS = register(delete(_versions).where(*_of_name()))
_NAMES = register(
    select(_versions.c.name)
    .where(
        _versions.c.app_name == bindparam("k_app"),
        _versions.c.user_id == bindparam("k_user"),
        _versions.c.session_id.in_([bindparam("k_scope"), bindparam("k_user_scope")]),
    )
    .distinct()
    .order_by(_versions.c.name)
)
_BLOB_REFERENCED = register(select(exists().where(_versions.c.blob_key == bindparam("k_blob"))))


def _next_version_upsert(dialect: Any) -> Any:
    # One row per name holds its next free version: the upsert creates it at 1 or increments it,
    # and returns the new value, so concurrent allocations of one name serialize on that row.
    statement = dialect.insert(_counters)
    return register(
        statement.on_conflict_do_update(
            index_elements=["app_name", "user_id", "session_id", "name"],
            set_={"next_version": _counters.c.next_version + 1},
        ).returning(_counters.c.next_version)
    )


#: The version counter upsert, one per dialect (picked by `db.dialect.name`).
_NEXT_VERSION = {
    "sqlite": _next_version_upsert(sqlite),
    "postgresql": _next_version_upsert(postgresql),
}


def _scope(session_id: str, name: str) -> str:
    """The `session_id` column of `name` addressed through `session_id`."""
    return USER_SCOPE if name.startswith(_USER_PREFIX) else session_id


class ArtifactRepository:
    """Statements on the artifact tables, run on the `Db` of the caller's unit of work."""

    def __init__(self, db: Db) -> None:
        self._db = db

    def session_pk(self, app_name: str, user_id: str, session_id: str) -> int | None:
        """The surrogate key of the session calls are made through, or None if it is gone."""
        pk = self._db.execute(SESSION_PK, session_key(app_name, user_id, session_id)).scalar()
        return None if pk is None else int(pk)

    def allocate_version(
        self, *, app_name: str, user_id: str, session_id: str, name: str, session_pk: int
    ) -> int:
        """Take the next version number of `name` (0 for its first); numbers are never reused."""
        user_scoped = name.startswith(_USER_PREFIX)
        row = {
            "app_name": app_name,
            "user_id": user_id,
            "session_id": _scope(session_id, name),
            "name": name,
            # A user-scoped counter outlives the session it was first allocated through.
            "session_pk": None if user_scoped else session_pk,
            "next_version": 1,
        }
        next_version = self._db.execute(_NEXT_VERSION[self._db.dialect.name], row).scalar()
        return int(next_version) - 1

    def version(
        self, *, app_name: str, user_id: str, session_id: str, name: str, version: int | None
    ) -> Any | None:
        """The row of one version of `name` (the latest if `version` is None), or None."""
        params: dict[str, Any] = _name_params(app_name, user_id, session_id, name)
        if version is None:
            return self._db.execute(_LATEST_VERSION, params).first()
        params["k_version"] = version
        return self._db.execute(_EXACT_VERSION, params).first()

    def versions(self, *, app_name: str, user_id: str, session_id: str, name: str) -> list[Any]:
        """The rows of every version of `name`, ascending."""
        params = _name_params(app_name, user_id, session_id, name)
        return list(self._db.execute(_VERSIONS, params).all())

    def names(self, *, app_name: str, user_id: str, session_id: str) -> list[str]:
        """Names of the session's and the user's artifacts, sorted."""
        params = {
            "k_app": app_name,
            "k_user": user_id,
            "k_scope": session_id,
            "k_user_scope": USER_SCOPE,
        }
        return [str(name) for (name,) in self._db.execute(_NAMES, params).all()]

    def delete_versions(self, *, app_name: str, user_id: str, session_id: str, name: str) -> int:
        """Delete every version row of `name` (the counter stays); how many there were."""
        params = _name_params(app_name, user_id, session_id, name)
        return self._db.execute(_DELETE_VERSIONS, params).rowcount

    def blob_referenced(self, blob_key: str) -> bool:
        """Whether any version row names the blob (garbage collection keeps it then)."""
        return bool(self._db.execute(_BLOB_REFERENCED, {"k_blob": blob_key}).scalar())

    def insert_versions(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        session_pk: int,
        event_seq: int,
        versions: Sequence["NewArtifactVersion"],
        now: float,
    ) -> None:
        """Insert the version rows an event names (DuplicateKey if one exists already)."""
        self._db.execute(
            _INSERT_VERSION,
            [
                _version_row(app_name, user_id, session_id, session_pk, event_seq, v, now)
                for v in versions
            ],
        )


def _name_params(app_name: str, user_id: str, session_id: str, name: str) -> dict[str, Any]:
    return {
        "k_app": app_name,
        "k_user": user_id,
        "k_scope": _scope(session_id, name),
        "k_name": name,
    }


def _version_row(
    app_name: str,
    user_id: str,
    session_id: str,
    session_pk: int,
    event_seq: int,
    version: "NewArtifactVersion",
    now: float,
) -> dict[str, Any]:
    return {
        "app_name": app_name,
        "user_id": user_id,
        "session_id": _scope(session_id, version.name),
        "session_pk": None if version.user_scoped else session_pk,
        "event_seq": event_seq,
        "name": version.name,
        "version": version.version,
        "mime_type": version.mime_type,
        # Set by the artifact services' `VersionRecord` (a NewArtifactVersion subclass), which the
        # session services pass through untouched; rows built elsewhere are not text.
        "is_text": bool(getattr(version, "is_text", False)),
        "size": version.size,
        "sha256": version.sha256,
        "blob_key": version.blob_key,
        "custom_metadata": version.custom_metadata,
        "create_time": version.create_time or now,
    }


__all__ = ["ArtifactRepository"]
