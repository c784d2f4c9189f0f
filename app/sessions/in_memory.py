"""SessionService kept in process memory: for tests and embedded, single-process use.

It honours the same contract as the database service (optimistic check, all-or-nothing appends,
scoped state) so code developed against it behaves the same in production. Everything handed out
is a deep copy, so callers can never mutate stored data behind the service's back. A threading
lock (never held across an await) guards the data, because ADK's synchronous `Runner.run` drives
the service from an event loop in another thread.
"""

import copy
import threading
import time
from collections.abc import Awaitable, Generator, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from app.errors import (
    ArtifactVersionConflict,
    SessionAlreadyExists,
    SessionConflict,
    SessionNotFound,
)
from app.pagination import event_cursor, event_page_token, session_cursor, session_page_token
from app.sessions.base import (
    BaseSessionService,
    EventPage,
    GetSessionConfig,
    NewArtifactVersion,
    SessionPage,
    apply_event_to_session,
)
from app.sessions.fence import Fence
from app.sessions.models import Event, Session
from app.sessions.state import merge_state, split_delta
from app.sessions.storage import (
    StorageLimits,
    prepare_event,
    prepare_import_sliced,
    session_id_or_new,
)
from app.wire import Loc, check_storable

T = TypeVar("T")


class _Ready(Generic[T]):
    """An already-computed result that can still be awaited."""

    def __init__(self, value: T) -> None:
        self._value = value

    def __await__(self) -> Generator[Any, None, T]:
        return self._value
        yield  # pragma: no cover - makes this a generator

    def __getattr__(self, name: str) -> Any:
        return getattr(self._value, name)


_UserKey = tuple[str, str]
_ArtifactKey = tuple[str, str, str, str, int]


@dataclass
class _StoredSession:
    app_name: str
    user_id: str
    id: str
    state: dict[str, Any]
    update_time: float
    events: list[tuple[int, dict[str, Any]]] = field(default_factory=list)

    @property
    def last_seq(self) -> int:
        return self.events[-1][0] if self.events else 0


class InMemorySessionService(BaseSessionService):
    """Sessions in dicts, guarded by one lock."""

    def __init__(
        self, *, max_session_events: int = 10_000, limits: StorageLimits | None = None
    ) -> None:
        self._sessions: dict[tuple[str, str, str], _StoredSession] = {}
        self._app_state: dict[str, dict[str, Any]] = {}
        self._user_state: dict[_UserKey, dict[str, Any]] = {}
        self._artifacts: dict[_ArtifactKey, NewArtifactVersion] = {}
        #: The next version of each artifact name: (app, user, session id or '', name).
        self._artifact_counters: dict[tuple[str, str, str, str], int] = {}
        self._max_session_events = max_session_events
        self._limits = limits or StorageLimits()
        self._lock = threading.Lock()

    def create_session(
        self,
        *,
        app_name: str,
        user_id: str,
        state: dict[str, Any] | None = None,
        session_id: str | None = None,
    ) -> Awaitable[Session]:
        """Create a session now (generated id if None); awaiting the result gives the Session.

        The work happens before this returns, so ADK-era code that calls it without `await`
        (the in-memory service used to be synchronous) still creates the session.
        """
        return _Ready(self._create_session(app_name, user_id, state, session_id))

    def _create_session(
        self,
        app_name: str,
        user_id: str,
        state: dict[str, Any] | None,
        session_id: str | None,
    ) -> Session:
        session_id = session_id_or_new(session_id)
        check_storable(state or {}, ("state",))
        scoped = split_delta(copy.deepcopy(state or {}))
        self._limits.check_state(scoped.session)
        with self._lock:
            key = (app_name, user_id, session_id)
            if key in self._sessions:
                raise SessionAlreadyExists(f"Session {session_id!r} already exists.")
            stored = _StoredSession(app_name, user_id, session_id, scoped.session, time.time())
            self._sessions[key] = stored
            self._app_state.setdefault(app_name, {}).update(scoped.app)
            self._user_state.setdefault((app_name, user_id), {}).update(scoped.user)
            return self._to_session(stored, [])

    async def import_session(
        self,
        *,
        app_name: str,
        user_id: str,
        events: Sequence[Event],
        state: dict[str, Any] | None = None,
        session_id: str | None = None,
        loc: Loc = (),
    ) -> Session:
        """Create the session with its events, state and shared state, all or nothing."""
        session_id = session_id_or_new(session_id)
        prepared = await prepare_import_sliced(state, events, self._limits, loc=loc)
        # The stored events hold the deltas' values: the state gets copies of its own.
        scoped = copy.deepcopy(prepared.state)
        with self._lock:
            key = (app_name, user_id, session_id)
            if key in self._sessions:
                raise SessionAlreadyExists(f"Session {session_id!r} already exists.")
            stored = _StoredSession(
                app_name,
                user_id,
                session_id,
                scoped.session,
                time.time(),
                events=list(enumerate(prepared.events, 1)),
            )
            self._sessions[key] = stored
            self._app_state.setdefault(app_name, {}).update(scoped.app)
            self._user_state.setdefault((app_name, user_id), {}).update(scoped.user)
            session = self._to_session(stored, stored.events)
        for seq, event in enumerate(events, 1):
            event.seq = seq
        return session

    async def get_session(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        config: GetSessionConfig | None = None,
    ) -> Session | None:
        """The session with merged state and its (most recent) events, or None."""
        config = config or GetSessionConfig()
        with self._lock:
            stored = self._sessions.get((app_name, user_id, session_id))
            if stored is None:
                return None
            events = stored.events
            if config.after_seq is not None:
                events = [e for e in events if e[0] > config.after_seq]
            limit = self._max_session_events
            if config.num_recent_events is not None:
                limit = min(limit, max(config.num_recent_events, 0))
            events = events[-limit:] if limit > 0 else []
            return self._to_session(stored, events)

    async def list_sessions(
        self,
        *,
        app_name: str,
        user_id: str,
        page_size: int = 100,
        page_token: str | None = None,
    ) -> SessionPage:
        """A page of the user's sessions of the app, most recently updated first."""
        before = session_cursor(page_token) if page_token else None
        with self._lock:
            stored = sorted(
                (
                    s
                    for s in self._sessions.values()
                    if s.app_name == app_name
                    and s.user_id == user_id
                    and (before is None or (s.update_time, s.id) < before)
                ),
                key=lambda s: (s.update_time, s.id),
                reverse=True,
            )[: page_size + 1]
            page = [self._to_session(s, []) for s in stored]
        next_token = None
        if len(page) > page_size:
            page = page[:page_size]
            next_token = session_page_token(page[-1].last_update_time, page[-1].id)
        return SessionPage(sessions=page, next_page_token=next_token)

    async def delete_session(self, *, app_name: str, user_id: str, session_id: str) -> None:
        """Delete the session with its events and session artifact rows."""
        with self._lock:
            if self._sessions.pop((app_name, user_id, session_id), None) is None:
                raise SessionNotFound(f"Session {session_id!r} does not exist.")
            session = (app_name, user_id, session_id)
            for key in [k for k in self._artifacts if k[:3] == session]:
                del self._artifacts[key]
            for counter in [k for k in self._artifact_counters if k[:3] == session]:
                del self._artifact_counters[counter]

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
        cursor = event_cursor(page_token, descending=descending) if page_token else None
        with self._lock:
            stored = self._sessions.get((app_name, user_id, session_id))
            if stored is None:
                raise SessionNotFound(f"Session {session_id!r} does not exist.")
            rows = [r for r in stored.events if after_seq is None or r[0] > after_seq]
            if descending:
                rows = [r for r in reversed(rows) if cursor is None or r[0] < cursor]
            else:
                rows = [r for r in rows if cursor is None or r[0] > cursor]
            rows = rows[: page_size + 1]
            events = [Event.from_stored(seq, copy.deepcopy(data)) for seq, data in rows[:page_size]]
        next_token = None
        if len(rows) > page_size:
            next_token = event_page_token(rows[page_size - 1][0], descending=descending)
        return EventPage(events=events, next_page_token=next_token)

    async def append_event(
        self,
        session: Session,
        event: Event,
        *,
        artifact_versions: Sequence[NewArtifactVersion] = (),
        blind: bool = False,
        fence: Fence | None = None,  # noqa: ARG002 - one process: no lease to lose
    ) -> Event:
        """Persist `event` with its deltas and artifact rows, all or nothing."""
        if event.partial:
            return event
        wire, temp = prepare_event(event, self._limits)
        scoped = split_delta(copy.deepcopy(wire["actions"].get("stateDelta", {})))
        with self._lock:
            stored = self._sessions.get((session.app_name, session.user_id, session.id))
            if stored is None:
                raise SessionNotFound(f"Session {session.id!r} does not exist.")
            if not blind and stored.last_seq != session.last_seq:
                raise SessionConflict(
                    f"Session {session.id!r} is at seq {stored.last_seq}.",
                    expected_seq=session.last_seq,
                    actual_seq=stored.last_seq,
                )
            artifact_keys = [self._artifact_key(session, v) for v in artifact_versions]
            if any(k in self._artifacts for k in artifact_keys) or len(set(artifact_keys)) < len(
                artifact_keys
            ):
                raise ArtifactVersionConflict(
                    "An artifact version named by the event already exists."
                )
            self._limits.check_state({**stored.state, **scoped.session})
            # Every check has passed: from here on nothing can fail, so the write is atomic.
            seq = stored.last_seq + 1
            stored.events.append((seq, wire))
            stored.state.update(scoped.session)
            stored.update_time = time.time()
            self._app_state.setdefault(session.app_name, {}).update(scoped.app)
            self._user_state.setdefault((session.app_name, session.user_id), {}).update(scoped.user)
            self._artifacts.update(zip(artifact_keys, artifact_versions, strict=True))
        event.seq = seq
        apply_event_to_session(session, event, temp)
        return event

    # -- artifact rows ---------------------------------------------------------------------
    # The in-memory counterpart of the artifact tables, which `InMemoryArtifactService` reads:
    # rows are inserted by `append_event` with the event that names them, and they (and the
    # session's counters) die with their session, as the database's cascade does.

    def has_session(self, app_name: str, user_id: str, session_id: str) -> bool:
        """Whether the session exists."""
        with self._lock:
            return (app_name, user_id, session_id) in self._sessions

    def allocate_artifact_version(
        self, app_name: str, user_id: str, session_id: str, name: str
    ) -> int:
        """The next free version of `name` (never reused); SessionNotFound if the session is gone.

        `session_id` is the addressed session; a `user:` name counts in the user's scope.
        """
        scope = "" if name.startswith("user:") else session_id
        with self._lock:
            if (app_name, user_id, session_id) not in self._sessions:
                raise SessionNotFound(f"Session {session_id!r} does not exist.")
            key = (app_name, user_id, scope, name)
            version = self._artifact_counters.get(key, 0)
            self._artifact_counters[key] = version + 1
            return version

    def artifact_rows(
        self, app_name: str, user_id: str, session_id: str
    ) -> list[NewArtifactVersion]:
        """The committed versions of the session's artifacts and of the user's `user:` ones."""
        scopes = {session_id, ""}
        with self._lock:
            return [
                row
                for (app, user, scope, _name, _version), row in self._artifacts.items()
                if app == app_name and user == user_id and scope in scopes
            ]

    def delete_artifact_rows(self, app_name: str, user_id: str, session_id: str, name: str) -> bool:
        """Delete every committed version of `name` (its counter keeps counting); any deleted."""
        scope = "" if name.startswith("user:") else session_id
        with self._lock:
            keys = [k for k in self._artifacts if k[:4] == (app_name, user_id, scope, name)]
            for key in keys:
                del self._artifacts[key]
            return bool(keys)

    def _artifact_key(self, session: Session, version: NewArtifactVersion) -> _ArtifactKey:
        scope = "" if version.user_scoped else session.id
        return (session.app_name, session.user_id, scope, version.name, version.version)

    def _to_session(
        self, stored: _StoredSession, events: list[tuple[int, dict[str, Any]]]
    ) -> Session:
        state = merge_state(
            stored.state,
            self._app_state.get(stored.app_name, {}),
            self._user_state.get((stored.app_name, stored.user_id), {}),
        )
        return Session(
            id=stored.id,
            app_name=stored.app_name,
            user_id=stored.user_id,
            state=copy.deepcopy(state),
            events=[Event.from_stored(seq, copy.deepcopy(data)) for seq, data in events],
            last_update_time=stored.update_time,
            last_seq=stored.last_seq,
        )
