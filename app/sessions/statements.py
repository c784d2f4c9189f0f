"""The session service's hot statements, built once (SQLAlchemy then reuses their compiled form,
and app.db.fast compiles each once per dialect). Parameters are named `k_*` (keys in WHERE
clauses) and `v_*` (new values), so they never collide with the column names Core binds for
INSERTs and SET clauses.
"""

import functools
from typing import Any, cast

from sqlalchemy import Table, bindparam, delete, insert, select, update
from sqlalchemy.dialects import postgresql, sqlite

from app.db.tables import (
    StorageAppState,
    StorageArtifactVersion,
    StorageEvent,
    StorageSession,
    StorageUserState,
)

_sessions = cast(Table, StorageSession.__table__)
_events = cast(Table, StorageEvent.__table__)
_app_states = cast(Table, StorageAppState.__table__)
_user_states = cast(Table, StorageUserState.__table__)


def by_key(table: Any = _sessions) -> tuple[Any, ...]:
    """WHERE clauses on (app_name, user_id, id) with the `k_app`, `k_user`, `k_id` parameters."""
    return (
        table.c.app_name == bindparam("k_app"),
        table.c.user_id == bindparam("k_user"),
        table.c.id == bindparam("k_id"),
    )


SESSION_ROW = select(_sessions).where(*by_key())
CLAIM_SEQ = (
    update(_sessions)
    .where(*by_key(), _sessions.c.last_seq == bindparam("k_expected"))
    .values(last_seq=bindparam("v_seq"), update_time=bindparam("v_now"))
    .returning(_sessions.c.pk, _sessions.c.state, _sessions.c.create_time)
)
SET_STATE = (
    update(_sessions).where(_sessions.c.pk == bindparam("k_pk")).values(state=bindparam("v_state"))
)
LAST_SEQ = select(_sessions.c.last_seq).where(*by_key())
SESSION_PK = select(_sessions.c.pk).where(*by_key())
DELETE_SESSION = delete(_sessions).where(*by_key()).returning(_sessions.c.pk)
INSERT_EVENT = insert(_events)
INSERT_SESSION = insert(_sessions)
INSERT_ARTIFACT_VERSION = insert(cast(Table, StorageArtifactVersion.__table__))
EVENTS_AFTER = (
    select(_events.c.seq, _events.c.event)
    .where(_events.c.session_pk == bindparam("k_pk"), _events.c.seq > bindparam("k_after"))
    .order_by(_events.c.seq.desc())
    .limit(bindparam("k_limit"))
)
APP_STATE = select(_app_states.c.key, _app_states.c.value).where(
    _app_states.c.app_name == bindparam("k_app")
)
USER_STATE = select(_user_states.c.key, _user_states.c.value).where(
    _user_states.c.app_name == bindparam("k_app"), _user_states.c.user_id == bindparam("k_user")
)


def session_key(app_name: str, user_id: str, session_id: str) -> dict[str, Any]:
    """The `k_*` parameters of a statement that addresses one session."""
    return {"k_app": app_name, "k_user": user_id, "k_id": session_id}


@functools.cache
def shared_state_upserts(dialect: str) -> tuple[Any, Any]:
    """Per-key upserts of `app:` and `user:` state (executemany over the delta's keys)."""
    insert_for = postgresql.insert if dialect == "postgresql" else sqlite.insert
    app_stmt = insert_for(_app_states)
    user_stmt = insert_for(_user_states)
    return (
        app_stmt.on_conflict_do_update(
            index_elements=["app_name", "key"],
            set_={"value": app_stmt.excluded.value, "update_time": app_stmt.excluded.update_time},
        ),
        user_stmt.on_conflict_do_update(
            index_elements=["app_name", "user_id", "key"],
            set_={
                "value": user_stmt.excluded.value,
                "update_time": user_stmt.excluded.update_time,
            },
        ),
    )
