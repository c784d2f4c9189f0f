"""Every statement on sessions, events and the app- and user-scoped state.

Statements are built once at import (and registered with the fast path's plan cache); parameters
are named `k_*` (keys in WHERE clauses) and `v_*` (new values), so they never collide with the
column names Core binds for INSERTs and SET clauses. Shared state is upserted key by key, so
concurrent writers of different `app:`/`user:` keys never lose each other's write.

A large import is written as a *staged* session: a session row under a user id no client can
name (`STAGED_USER_PREFIX`, which no id matching `app.wire.ID_PATTERN` starts with), filled with
events over several short units, then published by one UPDATE that gives it its user and
state. Until then nobody sees it; one that was never published (its process died) is deleted by
a later import of the app once it is `STALE_STAGED_SECONDS` old.
"""

import uuid
from collections.abc import Sequence
from typing import Any, cast

import orjson
from sqlalchemy import Table, Text, bindparam, delete, insert, select, tuple_, update
from sqlalchemy import cast as sql_cast
from sqlalchemy.dialects import postgresql, sqlite

from app.db.repositories.invocations import FENCE_HOLDS
from app.db.sqlite import register
from app.db.tables import StorageAppState, StorageEvent, StorageSession, StorageUserState
from app.db.uow import Db

_sessions = cast(Table, StorageSession.__table__)
_events = cast(Table, StorageEvent.__table__)
_app_states = cast(Table, StorageAppState.__table__)
_user_states = cast(Table, StorageUserState.__table__)

#: A seq above any stored one (an open upper bound for event pages).
_NO_UPPER_SEQ = 2**63 - 1


def _by_key() -> tuple[Any, ...]:
    return (
        _sessions.c.app_name == bindparam("k_app"),
        _sessions.c.user_id == bindparam("k_user"),
        _sessions.c.id == bindparam("k_id"),
    )


SESSION_ROW = register(select(_sessions).where(*_by_key()))
SESSION_PK = register(select(_sessions.c.pk).where(*_by_key()))
_LAST_SEQ = register(select(_sessions.c.last_seq).where(*_by_key()))
_CLAIM_SEQ = register(
    update(_sessions)
    .where(*_by_key(), _sessions.c.last_seq == bindparam("k_expected"))
    .values(last_seq=bindparam("v_seq"), update_time=bindparam("v_now"))
    .returning(_sessions.c.pk, _sessions.c.state, _sessions.c.create_time)
)
_CLAIM_NEXT_SEQ = register(
    update(_sessions)
    .where(*_by_key())
    .values(last_seq=_sessions.c.last_seq + 1, update_time=bindparam("v_now"))
    .returning(_sessions.c.pk, _sessions.c.state, _sessions.c.create_time, _sessions.c.last_seq)
)
#: `_CLAIM_NEXT_SEQ` for a run's event: only while the run's fence holds (`k_invocation`,
#: `k_owner`, `k_attempt`; see app/sessions/fence.py), checked in the same statement, so a
#: fenced append costs no extra round trip.
_CLAIM_NEXT_SEQ_FENCED = register(
    update(_sessions)
    .where(*_by_key(), FENCE_HOLDS)
    .values(last_seq=_sessions.c.last_seq + 1, update_time=bindparam("v_now"))
    .returning(_sessions.c.pk, _sessions.c.state, _sessions.c.create_time, _sessions.c.last_seq)
)
_CLAIM_NEXT_SEQ_BY_PK = register(
    update(_sessions)
    .where(_sessions.c.pk == bindparam("k_pk"))
    .values(last_seq=_sessions.c.last_seq + 1, update_time=bindparam("v_now"))
    .returning(_sessions.c.last_seq)
)
_SET_STATE = register(
    update(_sessions).where(_sessions.c.pk == bindparam("k_pk")).values(state=bindparam("v_state"))
)
_DELETE_SESSION = register(delete(_sessions).where(*_by_key()).returning(_sessions.c.pk))

#: User ids of staged sessions start with this; no client id can (see the module docstring).
STAGED_USER_PREFIX = "~import:"
#: A staged session older than this was abandoned (an import takes seconds).
STALE_STAGED_SECONDS = 3600
_PUBLISH_STAGED = register(
    update(_sessions)
    .where(_sessions.c.pk == bindparam("k_pk"))
    .values(
        user_id=bindparam("v_user"),
        state=bindparam("v_state"),
        last_seq=bindparam("v_seq"),
        update_time=bindparam("v_now"),
    )
)
_STAGED_RANGE = {
    "k_low": STAGED_USER_PREFIX,
    "k_high": STAGED_USER_PREFIX[:-1] + chr(ord(STAGED_USER_PREFIX[-1]) + 1),
}
_DELETE_BY_PK = register(delete(_sessions).where(_sessions.c.pk == bindparam("k_pk")))
# Staged user ids sort between the prefix and the prefix with its last character incremented,
# so the (app_name, user_id, id) key finds them.
_DELETE_STALE_STAGED = register(
    delete(_sessions).where(
        _sessions.c.app_name == bindparam("k_app"),
        _sessions.c.user_id >= bindparam("k_low"),
        _sessions.c.user_id < bindparam("k_high"),
        _sessions.c.create_time < bindparam("k_before"),
    )
)
_INSERT_SESSION = register(insert(_sessions))
_INSERT_SESSION_RETURNING_PK = register(insert(_sessions).returning(_sessions.c.pk))
_SESSIONS_BY_RECENCY = (_sessions.c.update_time.desc(), _sessions.c.id.desc())
_OF_USER = (
    _sessions.c.app_name == bindparam("k_app"),
    _sessions.c.user_id == bindparam("k_user"),
)
_SESSIONS_FIRST_PAGE = register(
    select(_sessions).where(*_OF_USER).order_by(*_SESSIONS_BY_RECENCY).limit(bindparam("k_limit"))
)
# The user's sessions come from the (app_name, user_id, id) key; the keyset cursor is a row
# comparison on (update_time, id), so pages never repeat or skip a session.
_SESSIONS_PAGE_AFTER = register(
    select(_sessions)
    .where(
        *_OF_USER,
        tuple_(_sessions.c.update_time, _sessions.c.id)
        < tuple_(bindparam("k_before_time"), bindparam("k_before_id")),
    )
    .order_by(*_SESSIONS_BY_RECENCY)
    .limit(bindparam("k_limit"))
)
_INSERT_EVENT = register(insert(_events))
_RECENT_EVENTS = register(
    select(_events.c.seq, _events.c.event)
    .where(_events.c.session_pk == bindparam("k_pk"), _events.c.seq > bindparam("k_after"))
    .order_by(_events.c.seq.desc())
    .limit(bindparam("k_limit"))
)
#: The same, each event as the JSON text the database holds (never parsed: read-only HTTP paths
#: splice it into their answer, which keeps a long session's GET free of per-event objects).
_RECENT_EVENTS_TEXT = register(
    select(_events.c.seq, sql_cast(_events.c.event, Text))
    .where(_events.c.session_pk == bindparam("k_pk"), _events.c.seq > bindparam("k_after"))
    .order_by(_events.c.seq.desc())
    .limit(bindparam("k_limit"))
)
_EVENT_PAGE_FILTER = (
    _events.c.session_pk == bindparam("k_pk"),
    _events.c.seq > bindparam("k_after"),
    _events.c.seq < bindparam("k_before"),
)
_EVENTS_ASC = register(
    select(_events.c.seq, _events.c.event)
    .where(*_EVENT_PAGE_FILTER)
    .order_by(_events.c.seq.asc())
    .limit(bindparam("k_limit"))
)
_EVENTS_DESC = register(
    select(_events.c.seq, _events.c.event)
    .where(*_EVENT_PAGE_FILTER)
    .order_by(_events.c.seq.desc())
    .limit(bindparam("k_limit"))
)
_INVOCATION_EVENTS = register(
    select(_events.c.seq, _events.c.event)
    .where(
        _events.c.session_pk == bindparam("k_pk"),
        _events.c.invocation_id == bindparam("k_invocation"),
        _events.c.seq > bindparam("k_after"),
    )
    .order_by(_events.c.seq)
)
_LAST_INVOCATION_EVENT = register(
    select(_events.c.seq, _events.c.event)
    .where(
        _events.c.session_pk == bindparam("k_pk"),
        _events.c.invocation_id == bindparam("k_invocation"),
    )
    .order_by(_events.c.seq.desc())
    .limit(1)
)
_APP_STATE = register(
    select(_app_states.c.key, _app_states.c.value).where(
        _app_states.c.app_name == bindparam("k_app")
    )
)
_USER_STATE = register(
    select(_user_states.c.key, _user_states.c.value).where(
        _user_states.c.app_name == bindparam("k_app"),
        _user_states.c.user_id == bindparam("k_user"),
    )
)


def _upserts(dialect: Any) -> tuple[Any, Any]:
    app_stmt = dialect.insert(_app_states)
    user_stmt = dialect.insert(_user_states)
    return (
        register(
            app_stmt.on_conflict_do_update(
                index_elements=["app_name", "key"],
                set_={
                    "value": app_stmt.excluded.value,
                    "update_time": app_stmt.excluded.update_time,
                },
            )
        ),
        register(
            user_stmt.on_conflict_do_update(
                index_elements=["app_name", "user_id", "key"],
                set_={
                    "value": user_stmt.excluded.value,
                    "update_time": user_stmt.excluded.update_time,
                },
            )
        ),
    )


#: Per-key upserts of `app:` and `user:` state, one pair per dialect (executemany over a delta).
_UPSERT_SHARED_STATE = {"sqlite": _upserts(sqlite), "postgresql": _upserts(postgresql)}

#: One stored event: its seq and its wire JSON (without `seq`).
StoredEvent = tuple[int, dict[str, Any]]


class SessionRepository:
    """Statements on the session tables, run on the `Db` of the caller's unit of work."""

    def __init__(self, db: Db) -> None:
        self._db = db

    # -- sessions -------------------------------------------------------------------------

    def get(self, key: dict[str, str]) -> Any | None:
        """The session row addressed by `session_key(...)`, or None."""
        return self._db.execute(SESSION_ROW, key).first()

    def pk(self, key: dict[str, str]) -> int | None:
        """The session's surrogate key, or None if there is no such session."""
        pk = self._db.execute(SESSION_PK, key).scalar()
        return None if pk is None else int(pk)

    def last_seq(self, key: dict[str, str]) -> int | None:
        """The session's last seq, or None if there is no such session."""
        seq = self._db.execute(_LAST_SEQ, key).scalar()
        return None if seq is None else int(seq)

    def insert(self, row: dict[str, Any]) -> None:
        """Insert a session row (DuplicateKey if its public key is taken)."""
        self._db.execute(_INSERT_SESSION, [row])

    def delete(self, key: dict[str, str]) -> bool:
        """Delete the session (events, leases and session artifacts cascade); whether it existed."""
        return self._db.execute(_DELETE_SESSION, key).first() is not None

    def insert_returning_pk(self, row: dict[str, Any]) -> int:
        """Insert a session row (DuplicateKey if its public key is taken); its surrogate key."""
        return int(self._db.execute(_INSERT_SESSION_RETURNING_PK, row).scalar())

    def insert_staged(self, row: dict[str, Any]) -> int:
        """Insert `row` as a staged session (under a staging user id); its surrogate key."""
        staged = {**row, "user_id": f"{STAGED_USER_PREFIX}{uuid.uuid4().hex}"}
        return self.insert_returning_pk(staged)

    def publish_staged(
        self, pk: int, *, user_id: str, state: dict[str, Any], last_seq: int, now: float
    ) -> None:
        """Give the staged session `pk` its user, state and last seq: it becomes visible with
        all its events at once (DuplicateKey if its public key was taken meanwhile)."""
        params = {"k_pk": pk, "v_user": user_id, "v_state": state, "v_seq": last_seq}
        self._db.execute(_PUBLISH_STAGED, {**params, "v_now": now})

    def delete_staged(self, pk: int) -> None:
        """Delete the staged session `pk` with its events (an import that failed midway)."""
        self._db.execute(_DELETE_BY_PK, {"k_pk": pk})

    def delete_stale_staged(self, app_name: str, *, now: float) -> None:
        """Delete the app's staged sessions abandoned `STALE_STAGED_SECONDS` ago."""
        params = {"k_app": app_name, "k_before": now - STALE_STAGED_SECONDS}
        self._db.execute(_DELETE_STALE_STAGED, {**params, **_STAGED_RANGE})

    def page(
        self, app_name: str, user_id: str, *, before: tuple[float, str] | None, limit: int
    ) -> list[Any]:
        """Up to `limit` session rows of the user in the app, most recently updated first (ties
        by id, descending), after the session (update_time, id) `before` in that order."""
        params: dict[str, Any] = {"k_app": app_name, "k_user": user_id, "k_limit": limit}
        if before is None:
            return list(self._db.execute(_SESSIONS_FIRST_PAGE, params).all())
        params |= {"k_before_time": before[0], "k_before_id": before[1]}
        return list(self._db.execute(_SESSIONS_PAGE_AFTER, params).all())

    def claim_seq(
        self, key: dict[str, str], *, expected: int, seq: int, now: float
    ) -> tuple[int, dict[str, Any], float] | None:
        """Move `last_seq` from `expected` to `seq` (the optimistic check, which also takes the
        row lock); the session's (pk, state, create_time), or None if it is elsewhere or gone."""
        params = {**key, "k_expected": expected, "v_seq": seq, "v_now": now}
        row = self._db.execute(_CLAIM_SEQ, params).first()
        return None if row is None else (row[0], row[1], row[2])

    def claim_next_seq(
        self, key: dict[str, str], *, now: float, fenced_by: tuple[str, str, int] | None = None
    ) -> tuple[int, dict[str, Any], float, int] | None:
        """Move `last_seq` one up whatever it is (a write with no precondition; the row lock
        orders concurrent writers); the session's (pk, state, create_time, new seq), or None if
        it is gone, or if `fenced_by` (invocation id, owner, attempt) no longer holds its
        invocation."""
        if fenced_by is None:
            row = self._db.execute(_CLAIM_NEXT_SEQ, {**key, "v_now": now}).first()
        else:
            invocation_id, owner, attempt = fenced_by
            params = {
                **key,
                "v_now": now,
                "k_invocation": invocation_id,
                "k_owner": owner,
                "k_attempt": attempt,
            }
            row = self._db.execute(_CLAIM_NEXT_SEQ_FENCED, params).first()
        return None if row is None else (row[0], row[1], row[2], row[3])

    def claim_next_seq_by_pk(self, session_pk: int, *, now: float) -> int | None:
        """`claim_next_seq` for a session known by its key; the new seq, None if it is gone."""
        seq = self._db.execute(_CLAIM_NEXT_SEQ_BY_PK, {"k_pk": session_pk, "v_now": now}).scalar()
        return None if seq is None else int(seq)

    def set_state(self, session_pk: int, state: dict[str, Any]) -> None:
        """Replace the session's own (unprefixed) state."""
        self._db.execute(_SET_STATE, [{"k_pk": session_pk, "v_state": state}])

    # -- events ---------------------------------------------------------------------------

    def insert_event(self, row: dict[str, Any]) -> None:
        """Insert one event row (its `event` may be encoded already: `insert_events`)."""
        self.insert_events([row])

    def insert_events(self, rows: Sequence[dict[str, Any]]) -> None:
        """Insert event rows (one executemany).

        A row's `event` may be its wire JSON already encoded (bytes): the engines serialize
        JSON columns with orjson, which writes a Fragment as it is, so it is not encoded twice.
        """
        if rows:
            self._db.execute(
                _INSERT_EVENT,
                [
                    {**row, "event": orjson.Fragment(row["event"])}
                    if isinstance(row["event"], bytes)
                    else row
                    for row in rows
                ],
            )

    def recent_events(self, session_pk: int, *, after_seq: int, limit: int) -> list[StoredEvent]:
        """The last `limit` events after `after_seq`, in ascending seq order."""
        params = {"k_pk": session_pk, "k_after": after_seq, "k_limit": limit}
        rows = [(seq, data) for seq, data in self._db.execute(_RECENT_EVENTS, params).all()]
        rows.reverse()
        return rows

    def recent_events_text(
        self, session_pk: int, *, after_seq: int, limit: int
    ) -> list[tuple[int, str]]:
        """`recent_events`, each event as its stored JSON text."""
        params = {"k_pk": session_pk, "k_after": after_seq, "k_limit": limit}
        rows = [(seq, text) for seq, text in self._db.execute(_RECENT_EVENTS_TEXT, params).all()]
        rows.reverse()
        return rows

    def event_page(
        self, session_pk: int, *, after_seq: int, before_seq: int | None, limit: int, desc: bool
    ) -> list[StoredEvent]:
        """Up to `limit` events strictly between the two seqs, in the asked order."""
        params = {
            "k_pk": session_pk,
            "k_after": after_seq,
            "k_before": _NO_UPPER_SEQ if before_seq is None else before_seq,
            "k_limit": limit,
        }
        statement = _EVENTS_DESC if desc else _EVENTS_ASC
        return [(seq, data) for seq, data in self._db.execute(statement, params).all()]

    def invocation_events(
        self, session_pk: int, invocation_id: str, *, after_seq: int
    ) -> list[StoredEvent]:
        """The events of one invocation after `after_seq`, in order."""
        params = {"k_pk": session_pk, "k_invocation": invocation_id, "k_after": after_seq}
        return [(seq, data) for seq, data in self._db.execute(_INVOCATION_EVENTS, params).all()]

    def last_invocation_event(self, session_pk: int, invocation_id: str) -> StoredEvent | None:
        """The last event of one invocation, or None if it has none."""
        params = {"k_pk": session_pk, "k_invocation": invocation_id}
        row = self._db.execute(_LAST_INVOCATION_EVENT, params).first()
        return None if row is None else (row[0], row[1])

    # -- shared state ---------------------------------------------------------------------

    def shared_state(self, app_name: str, user_id: str) -> tuple[dict[str, Any], dict[str, Any]]:
        """The app's `app:` state and the user's `user:` state (keys without prefixes)."""
        key = {"k_app": app_name, "k_user": user_id}
        app_rows: Sequence[tuple[str, Any]] = self._db.execute(_APP_STATE, key).all()
        user_rows: Sequence[tuple[str, Any]] = self._db.execute(_USER_STATE, key).all()
        return dict(app_rows), dict(user_rows)

    def upsert_shared_state(
        self,
        app_name: str,
        user_id: str,
        app_delta: dict[str, Any],
        user_delta: dict[str, Any],
        now: float,
    ) -> None:
        """Write the keys of the two deltas (prefixes already stripped), key by key."""
        upsert_app, upsert_user = _UPSERT_SHARED_STATE[self._db.dialect.name]
        if app_delta:
            self._db.execute(
                upsert_app,
                [
                    {"app_name": app_name, "key": k, "value": v, "update_time": now}
                    for k, v in sorted(app_delta.items())
                ],
            )
        if user_delta:
            self._db.execute(
                upsert_user,
                [
                    {
                        "app_name": app_name,
                        "user_id": user_id,
                        "key": k,
                        "value": v,
                        "update_time": now,
                    }
                    for k, v in sorted(user_delta.items())
                ],
            )


__all__ = ["SESSION_PK", "SESSION_ROW", "SessionRepository", "StoredEvent"]
