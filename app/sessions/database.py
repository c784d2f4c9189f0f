"""SessionService on SQLAlchemy (SQLite or PostgreSQL).

Each public method is one unit of work that commits before it returns, so the API never answers
before its write is durable and the engine gets one transaction per event. `append_event` is the
heart: a conditional UPDATE of the session row on `last_seq` (the optimistic check, which also takes
the row lock), the event INSERT with `seq = last_seq + 1`, the state writes and the artifact version
rows, all committed together or not at all. Shared state is upserted key by key, so concurrent
writers of different `app:`/`user:` keys never lose each other's write. Reads run in one snapshot
(REPEATABLE READ on PostgreSQL; a WAL read transaction on SQLite) so state and events agree.
"""

import time
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

from sqlalchemy import Row, Select, select
from sqlalchemy.engine import Connection
from sqlalchemy.exc import DBAPIError, IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from app.db import fast
from app.db.tables import (
    StorageEvent,
    StorageSession,
)
from app.db.tables.artifacts import USER_SCOPE
from app.db.units import Units
from app.errors import (
    ArtifactVersionConflict,
    SessionAlreadyExists,
    SessionConflict,
    SessionNotFound,
    UnstorableValue,
)
from app.sessions import statements as stmt
from app.sessions.base import (
    BaseSessionService,
    EventPage,
    GetSessionConfig,
    NewArtifactVersion,
    SessionPage,
    StorageLimits,
    apply_event_to_session,
    encode_page_token,
    event_cursor,
    event_page_token,
    prepare_event,
    session_cursor,
    validate_id,
)
from app.sessions.history_cache import HistoryCache
from app.sessions.models import Event, Session
from app.sessions.state import ScopedDelta, merge_state, split_delta

#: A session row, its (seq, event JSON) rows in order, its app state and its user state.
_Loaded = tuple[Row[Any], list[tuple[int, dict[str, Any]]], dict[str, Any], dict[str, Any]]


class DatabaseSessionService(BaseSessionService):
    """Sessions, events and scoped state in a relational database."""

    def __init__(
        self,
        db_engine: AsyncEngine,
        *,
        max_session_events: int = 10_000,
        limits: StorageLimits | None = None,
        history_cache_events: int = 20_000,
    ) -> None:
        self._db_engine = db_engine
        self._units = Units(db_engine)
        self._max_session_events = max_session_events
        self._limits = limits or StorageLimits()
        self._history = HistoryCache(history_cache_events)
        self._dialect = db_engine.dialect.name
        self._upsert_app_state, self._upsert_user_state = stmt.shared_state_upserts(self._dialect)

    # Core statements on connections, not ORM sessions: these are the hot path of every turn,
    # and the ORM's unit-of-work bookkeeping cost more CPU than the statements themselves.

    @asynccontextmanager
    async def _read(self) -> AsyncIterator[AsyncConnection]:
        async with self._db_engine.connect() as db:
            if self._dialect != "sqlite":
                await db.execution_options(isolation_level="REPEATABLE READ")
            async with db.begin():
                yield db

    # -- sessions -------------------------------------------------------------------------

    async def create_session(
        self,
        *,
        app_name: str,
        user_id: str,
        state: dict[str, Any] | None = None,
        session_id: str | None = None,
    ) -> Session:
        """Create a session (generated id if `session_id` is None)."""
        session_id = (
            uuid.uuid4().hex if session_id is None else validate_id("sessionId", session_id)
        )
        scoped = split_delta(state or {})
        self._limits.check_state(scoped.session)
        now = time.time()
        try:
            app_state, user_state = await self._units.write(
                "create_session",
                lambda db: self._insert_session(db, app_name, user_id, session_id, scoped, now),
            )
        except IntegrityError as exc:
            raise SessionAlreadyExists(f"Session {session_id!r} already exists.") from exc
        except DBAPIError as exc:
            raise UnstorableValue("The initial state cannot be stored.") from exc
        return Session(
            id=session_id,
            app_name=app_name,
            user_id=user_id,
            state=merge_state(scoped.session, app_state, user_state),
            last_update_time=now,
        )

    async def get_session(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        config: GetSessionConfig | None = None,
    ) -> Session | None:
        """The session with merged state and its (most recent) events, or None."""
        if config is None or (config.num_recent_events is None and config.after_seq is None):
            if self._history.budget > 0:
                return await self._get_with_history_cache(app_name, user_id, session_id)
        loaded = await self._load(app_name, user_id, session_id, config)
        if loaded is None:
            return None
        row, rows, app_state, user_state = loaded
        events = [Event.from_stored(seq, data) for seq, data in rows]
        return _to_session(row, app_state, user_state, events)

    async def _get_with_history_cache(
        self, app_name: str, user_id: str, session_id: str
    ) -> Session | None:
        """Whole-history read (what the Runner does each turn) that parses only new events."""
        cached: list[Event] | None = None

        def after_cached(row: Row[Any]) -> int:
            nonlocal cached
            cached = self._history.get((row.pk, row.create_time), row.last_seq)
            return (cached[-1].seq or 0) if cached else 0

        loaded = await self._load(app_name, user_id, session_id, None, after_seq_of=after_cached)
        if loaded is None:
            return None
        row, rows, app_state, user_state = loaded
        new = [Event.from_stored(seq, data) for seq, data in rows]
        events = [*(cached or []), *new][-self._max_session_events :]
        self._history.put((row.pk, row.create_time), events)
        return _to_session(row, app_state, user_state, list(events))

    async def get_session_json(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        config: GetSessionConfig | None = None,
    ) -> tuple[dict[str, Any], int] | None:
        """The session's ADK JSON and last_seq, events served as stored (no re-validation)."""
        loaded = await self._load(app_name, user_id, session_id, config)
        if loaded is None:
            return None
        row, rows, app_state, user_state = loaded
        body = {
            "id": row.id,
            "appName": row.app_name,
            "userId": row.user_id,
            "state": merge_state(row.state, app_state, user_state),
            "events": [{**data, "seq": seq} for seq, data in rows],
            "lastUpdateTime": row.update_time,
        }
        return body, row.last_seq

    async def _load(
        self,
        app_name: str,
        user_id: str,
        session_id: str,
        config: GetSessionConfig | None,
        *,
        after_seq_of: Callable[[Row[Any]], int] | None = None,
    ) -> _Loaded | None:
        config = config or GetSessionConfig()
        limit = self._max_session_events
        if config.num_recent_events is not None:
            limit = min(limit, max(config.num_recent_events, 0))
        key = stmt.session_key(app_name, user_id, session_id)

        def unit(db: Connection) -> _Loaded | None:
            row = fast.first(db, stmt.SESSION_ROW, key)
            if row is None:
                return None
            after_seq = after_seq_of(row) if after_seq_of else config.after_seq
            rows: list[tuple[int, dict[str, Any]]] = []
            if limit > 0:
                params = {"k_pk": row.pk, "k_after": -1 if after_seq is None else after_seq}
                rows = [
                    (seq, data)
                    for seq, data in fast.rows(db, stmt.EVENTS_AFTER, {**params, "k_limit": limit})
                ]
            app_state = dict(fast.rows(db, stmt.APP_STATE, key))
            user_state = dict(fast.rows(db, stmt.USER_STATE, key))
            return row, rows, app_state, user_state

        loaded = await self._units.read(unit)
        if loaded is None:
            return None
        row, rows, app_state, user_state = loaded
        rows.reverse()
        return row, rows, app_state, user_state

    async def list_sessions(
        self,
        *,
        app_name: str,
        user_id: str,
        page_size: int = 100,
        page_token: str | None = None,
    ) -> SessionPage:
        """A page of the user's sessions of the app, ordered by id, without events."""
        query = (
            select(StorageSession.__table__)
            .where(StorageSession.app_name == app_name, StorageSession.user_id == user_id)
            .order_by(StorageSession.id)
            .limit(page_size + 1)
        )
        if page_token:
            query = query.where(StorageSession.id > session_cursor(page_token))
        async with self._read() as db:
            rows = list((await db.execute(query)).all())
            app_state, user_state = await self._shared_state(db, app_name, user_id)
        next_token = None
        if len(rows) > page_size:
            rows = rows[:page_size]
            next_token = encode_page_token({"k": "sessions", "after": rows[-1].id})
        return SessionPage(
            sessions=[_to_session(r, app_state, user_state, []) for r in rows],
            next_page_token=next_token,
        )

    async def delete_session(self, *, app_name: str, user_id: str, session_id: str) -> None:
        """Delete the session; events and session artifact rows cascade."""
        key = stmt.session_key(app_name, user_id, session_id)
        deleted = await self._units.write(
            "delete_session", lambda db: fast.first(db, stmt.DELETE_SESSION, key)
        )
        if deleted is None:
            raise SessionNotFound(f"Session {session_id!r} does not exist.")

    async def list_events(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        after_seq: int | None = None,
        page_size: int = 100,
        page_token: str | None = None,
        descending: bool = False,
    ) -> EventPage:
        """A page of the session's events ordered by seq."""
        async with self._read() as db:
            row = await self._session_row(db, app_name, user_id, session_id)
            if row is None:
                raise SessionNotFound(f"Session {session_id!r} does not exist.")
            query: Select[tuple[int, dict[str, Any]]] = select(
                StorageEvent.seq, StorageEvent.event
            ).where(StorageEvent.session_pk == row.pk)
            if after_seq is not None:
                query = query.where(StorageEvent.seq > after_seq)
            if page_token:
                cursor = event_cursor(page_token, descending=descending)
                query = query.where(
                    StorageEvent.seq < cursor if descending else StorageEvent.seq > cursor
                )
            order = StorageEvent.seq.desc() if descending else StorageEvent.seq.asc()
            rows = (await db.execute(query.order_by(order).limit(page_size + 1))).all()
        next_token = None
        if len(rows) > page_size:
            rows = rows[:page_size]
            next_token = event_page_token(rows[-1][0], descending=descending)
        return EventPage(
            events=[Event.from_stored(seq, data) for seq, data in rows], next_page_token=next_token
        )

    # -- events ---------------------------------------------------------------------------

    async def append_event(
        self,
        session: Session,
        event: Event,
        *,
        artifact_versions: Sequence[NewArtifactVersion] = (),
    ) -> Event:
        """Persist `event` with its deltas and artifact rows in one transaction."""
        if event.partial:
            return event
        wire, temp = prepare_event(event, self._limits)
        scoped = split_delta(wire["actions"].get("stateDelta", {}))
        expected = session.last_seq
        seq = expected + 1
        now = time.time()
        key = stmt.session_key(session.app_name, session.user_id, session.id)

        def unit(db: Connection) -> tuple[int, float]:
            claimed = fast.first(
                db, stmt.CLAIM_SEQ, {**key, "k_expected": expected, "v_seq": seq, "v_now": now}
            )
            if claimed is None:
                actual = fast.scalar(db, stmt.LAST_SEQ, key)
                if actual is None:
                    raise SessionNotFound(f"Session {session.id!r} does not exist.")
                raise SessionConflict(
                    f"Session {session.id!r} is at seq {actual}, the writer expected {expected}.",
                    expected_seq=expected,
                    actual_seq=actual,
                )
            session_pk, stored_state, create_time = claimed
            fast.execute_many(
                db,
                stmt.INSERT_EVENT,
                [
                    {
                        "session_pk": session_pk,
                        "seq": seq,
                        "id": event.id,
                        "invocation_id": event.invocation_id,
                        "author": event.author,
                        "timestamp": event.timestamp,
                        "event": wire,
                    }
                ],
            )
            if scoped.session:
                new_state = {**stored_state, **scoped.session}
                self._limits.check_state(new_state)
                fast.execute_many(db, stmt.SET_STATE, [{"k_pk": session_pk, "v_state": new_state}])
            self._upsert_shared_state(
                db, session.app_name, session.user_id, scoped.app, scoped.user, now
            )
            if artifact_versions:
                fast.execute_many(
                    db,
                    stmt.INSERT_ARTIFACT_VERSION,
                    [
                        _artifact_row(session, session_pk, seq, version, now)
                        for version in artifact_versions
                    ],
                )
            return session_pk, create_time

        try:
            session_pk, create_time = await self._units.write("append_event", unit)
        except IntegrityError as exc:
            if artifact_versions:
                raise ArtifactVersionConflict(
                    "An artifact version named by the event already exists."
                ) from exc
            raise SessionConflict(
                "Another writer appended the same seq.", expected_seq=expected, actual_seq=seq
            ) from exc
        except DBAPIError as exc:
            raise UnstorableValue(f"The database rejected the event: {exc.orig}") from exc
        event.seq = seq
        self._history.extend((session_pk, create_time), event)
        apply_event_to_session(session, event, temp)
        return event

    # -- helpers --------------------------------------------------------------------------

    @staticmethod
    async def _session_row(
        db: AsyncConnection, app_name: str, user_id: str, session_id: str
    ) -> Row[Any] | None:
        key = stmt.session_key(app_name, user_id, session_id)
        return (await db.execute(stmt.SESSION_ROW, key)).one_or_none()

    @staticmethod
    async def _shared_state(
        db: AsyncConnection, app_name: str, user_id: str
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        app_rows = await db.execute(stmt.APP_STATE, {"k_app": app_name})
        user_rows = await db.execute(stmt.USER_STATE, {"k_app": app_name, "k_user": user_id})
        return dict(app_rows.all()), dict(user_rows.all())

    def _insert_session(
        self,
        db: Connection,
        app_name: str,
        user_id: str,
        session_id: str,
        scoped: ScopedDelta,
        now: float,
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Insert the session row and its initial shared state; the app and user state after."""
        fast.execute_many(
            db,
            stmt.INSERT_SESSION,
            [
                {
                    "app_name": app_name,
                    "user_id": user_id,
                    "id": session_id,
                    "state": scoped.session,
                    "last_seq": 0,
                    "create_time": now,
                    "update_time": now,
                }
            ],
        )
        self._upsert_shared_state(db, app_name, user_id, scoped.app, scoped.user, now)
        key = {"k_app": app_name, "k_user": user_id}
        return dict(fast.rows(db, stmt.APP_STATE, key)), dict(fast.rows(db, stmt.USER_STATE, key))

    def _upsert_shared_state(
        self,
        db: Connection,
        app_name: str,
        user_id: str,
        app_delta: dict[str, Any],
        user_delta: dict[str, Any],
        now: float,
    ) -> None:
        if app_delta:
            fast.execute_many(
                db,
                self._upsert_app_state,
                [
                    {"app_name": app_name, "key": k, "value": v, "update_time": now}
                    for k, v in sorted(app_delta.items())
                ],
            )
        if user_delta:
            fast.execute_many(
                db,
                self._upsert_user_state,
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


def _to_session(
    row: Row[Any],
    app_state: dict[str, Any],
    user_state: dict[str, Any],
    events: list[Event],
) -> Session:
    return Session(
        id=row.id,
        app_name=row.app_name,
        user_id=row.user_id,
        state=merge_state(row.state, app_state, user_state),
        events=events,
        last_update_time=row.update_time,
        last_seq=row.last_seq,
    )


def _artifact_row(
    session: Session, session_pk: int, seq: int, version: NewArtifactVersion, now: float
) -> dict[str, Any]:
    return {
        "app_name": session.app_name,
        "user_id": session.user_id,
        "session_id": USER_SCOPE if version.user_scoped else session.id,
        "session_pk": None if version.user_scoped else session_pk,
        "event_seq": seq,
        "name": version.name,
        "version": version.version,
        "mime_type": version.mime_type,
        "size": version.size,
        "sha256": version.sha256,
        "blob_key": version.blob_key,
        "custom_metadata": version.custom_metadata,
        "create_time": version.create_time or now,
    }
