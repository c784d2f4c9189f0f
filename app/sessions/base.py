"""The SessionService port: what the engine and the API need from session storage.

Every implementation passes the one contract suite in `tests/sessions/test_session_contract.py`.
Arguments are keyword-only (as in ADK) so call sites stay readable and the port can grow.
"""

from abc import ABC, abstractmethod
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from app.errors import (
    SessionConflict,
    SessionNotFound,
)
from app.sessions.fence import Fence
from app.sessions.models import Event, EventActions, Session, new_invocation_id
from app.wire import Loc


@dataclass(frozen=True)
class GetSessionConfig:
    """Which events `get_session` returns: the last N, and/or only those after a seq."""

    num_recent_events: int | None = None
    after_seq: int | None = None


@dataclass(frozen=True)
class NewArtifactVersion:
    """An artifact version row to insert in the transaction of the event that names it."""

    name: str
    version: int
    mime_type: str
    size: int
    sha256: str
    blob_key: str
    custom_metadata: dict[str, Any] = field(default_factory=dict)
    create_time: float = 0.0

    @property
    def user_scoped(self) -> bool:
        """Whether the artifact belongs to the user rather than the session."""
        return self.name.startswith("user:")


@dataclass
class SessionPage:
    """One page of sessions (without events) and the token of the next page."""

    sessions: list[Session]
    next_page_token: str | None = None


@dataclass
class EventPage:
    """One page of events in the requested order and the token of the next page."""

    events: list[Event]
    next_page_token: str | None = None


class BaseSessionService(ABC):
    """Stores sessions, their ordered events and the scoped state."""

    @abstractmethod
    def create_session(
        self,
        *,
        app_name: str,
        user_id: str,
        state: dict[str, Any] | None = None,
        session_id: str | None = None,
    ) -> Awaitable[Session]:
        """Create a session (generated id if `session_id` is None).

        Raises:
            SessionAlreadyExists: `session_id` is taken for this app and user.
        """

    @abstractmethod
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
        """Create a session that holds `events`, all in one transaction (ADK's create with
        `events`, e.g. a session exported with GET and posted back).

        The events get seq 1..N in the given order and keep their id, invocationId, author,
        timestamp, content and actions (`temp:` keys are stripped, as on append). The state is
        `state`, then each event's stateDelta applied in order, scope by scope as append applies
        them; so `app:` and `user:` keys are written to the app's and user's shared state too.
        Artifact deltas stay on the events as recorded, but no artifact version rows are created:
        the import brings no bytes for them, so those versions cannot be read in the new session.
        Each event passes the checks an append makes (`prepare_import`); nothing is stored
        unless all pass.

        Args:
            events: complete events (a partial one is refused), ids unique among them.
            state: the initial state, before the events' deltas.
            loc: where the request fields sit in the caller's document; errors name
                `(*loc, "events", index, ...)` (the API passes `("body",)`).

        Raises:
            SessionAlreadyExists: `session_id` is taken for this app and user.
            InvalidRequest: an event is partial, repeats an id or has an id storage cannot hold.
            UnstorableValue: a value of the state or an event cannot be stored.
            EventTooLarge, StateTooLarge: an event, or the state the import leaves, is too large.
        """

    @abstractmethod
    async def get_session(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        config: GetSessionConfig | None = None,
    ) -> Session | None:
        """The session with merged state and its (most recent) events, or None."""

    async def get_session_json(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        config: GetSessionConfig | None = None,
    ) -> tuple[bytes, int] | None:
        """The session as encoded ADK JSON (with `seq` on events) and its last_seq, or None.

        Read-only HTTP paths use this; implementations may serve stored JSON without building
        models (the database service splices each event's stored text), which keeps big
        sessions cheap to read.
        """
        session = await self.get_session(
            app_name=app_name, user_id=user_id, session_id=session_id, config=config
        )
        if session is None:
            return None
        return orjson.dumps(session.to_wire()), session.last_seq

    @abstractmethod
    async def list_sessions(
        self,
        *,
        app_name: str,
        user_id: str,
        page_size: int = 100,
        page_token: str | None = None,
    ) -> SessionPage:
        """A page of the user's sessions of the app without events, most recently updated first.

        Ties are ordered by id (descending), and the page token names the last session's
        (update time, id), so pages never repeat or skip a session. One that is updated while a
        client walks the pages moves to the front, behind the cursor: the walk sees it at most
        once, where it stood before the update, or not at all if it had not been reached yet.
        """

    @abstractmethod
    async def delete_session(self, *, app_name: str, user_id: str, session_id: str) -> None:
        """Delete the session with its events and session-scoped artifact rows.

        Raises:
            SessionNotFound: no such session.
        """

    @abstractmethod
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
        """A page of the session's events ordered by seq.

        Raises:
            SessionNotFound: no such session.
        """

    @abstractmethod
    async def append_event(
        self,
        session: Session,
        event: Event,
        *,
        artifact_versions: Sequence[NewArtifactVersion] = (),
        blind: bool = False,
        fence: Fence | None = None,
    ) -> Event:
        """Persist `event` with its state delta and artifact rows in one transaction.

        Partial events are returned unpersisted. `temp:` keys are applied to `session.state` for
        the rest of the invocation but stripped from the stored (and returned) event. On success
        `event.seq` is set and `session` is updated in place (events, state, last_seq).

        Args:
            session: the writer's view; its `last_seq` is the optimistic-concurrency token.
            event: the event to append.
            artifact_versions: version rows named by `event.actions.artifact_delta`.
            blind: append after whatever the session holds now instead of checking `last_seq`:
                for writes nobody conditioned (a PATCH without If-Match, a run that holds the
                session's lease), which then never fail because another writer got in first.
                Its state delta is applied key by key on top of the stored state.
            fence: the lease of the run writing (`app.sessions.fence`): the event commits only
                while that attempt still holds its invocation, checked in the same
                transaction. Services without invocation leases (in-memory: one process, no
                takeovers) accept it and have nothing to check.

        Raises:
            SessionNotFound: the session was deleted.
            SessionConflict: another writer appended since `session` was read (not if blind).
            LeaseLost: `fence` no longer holds (nothing was written).
            ArtifactVersionConflict: an artifact version row already exists.
            UnstorableValue: the event or a state value cannot be stored.
        """

    async def append_user_event(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        actions: EventActions,
        invocation_prefix: str = "p-",
        artifact_versions: Sequence[NewArtifactVersion] = (),
        expected_seq: int | None = None,
    ) -> Event:
        """Record `actions` as a content-less user event (REST writes: state, artifacts).

        With `expected_seq` the write is conditional (SessionConflict if the session moved on,
        the only case that is a conflict); without it the event is appended blind, after
        whatever the session holds, since such an event does not depend on what came before it.
        """
        event, _ = await self._append_user_event(
            app_name=app_name,
            user_id=user_id,
            session_id=session_id,
            actions=actions,
            invocation_prefix=invocation_prefix,
            artifact_versions=artifact_versions,
            expected_seq=expected_seq,
        )
        return event

    async def _append_user_event(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        actions: EventActions,
        invocation_prefix: str = "p-",
        artifact_versions: Sequence[NewArtifactVersion] = (),
        expected_seq: int | None = None,
    ) -> tuple[Event, Session]:
        session = await self.get_session(
            app_name=app_name,
            user_id=user_id,
            session_id=session_id,
            config=GetSessionConfig(num_recent_events=0),
        )
        if session is None:
            raise SessionNotFound(f"Session {session_id!r} does not exist.")
        if expected_seq is not None and session.last_seq != expected_seq:
            raise SessionConflict(
                f"Session {session_id!r} is at seq {session.last_seq}.",
                expected_seq=expected_seq,
                actual_seq=session.last_seq,
            )
        event = Event(
            author="user",
            invocation_id=new_invocation_id(invocation_prefix),
            actions=actions.model_copy(deep=True),
        )
        await self.append_event(
            session, event, artifact_versions=artifact_versions, blind=expected_seq is None
        )
        return event, session

    async def update_state(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        state_delta: dict[str, Any],
        expected_seq: int | None = None,
    ) -> Event:
        """Record `state_delta` as a user event (ADK's PATCH), returning the persisted event."""
        return await self.append_user_event(
            app_name=app_name,
            user_id=user_id,
            session_id=session_id,
            actions=EventActions(state_delta=state_delta),
            expected_seq=expected_seq,
        )

    async def apply_state_delta(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        state_delta: dict[str, Any],
        expected_seq: int | None = None,
    ) -> Session:
        """`update_state`, returning the session as the write saw it: its state with the delta
        applied, the new event as its only event. What a caller can answer with if it cannot
        read the session back after the write committed."""
        _, session = await self._append_user_event(
            app_name=app_name,
            user_id=user_id,
            session_id=session_id,
            actions=EventActions(state_delta=state_delta),
            expected_seq=expected_seq,
        )
        return session

    async def ping(self) -> None:  # noqa: B027 - optional hook, in-process services are always up
        """Raise if the storage behind the service cannot be reached (readiness)."""

    async def close(self) -> None:  # noqa: B027 - optional hook, most services hold nothing
        """Release resources held by the service."""


def apply_event_to_session(session: Session, event: Event, temp_delta: dict[str, Any]) -> None:
    """Reflect a persisted event in the writer's in-memory session object."""
    session.state.update(event.actions.state_delta)
    session.state.update(temp_delta)
    session.events.append(event)
    if event.seq is not None:
        session.last_seq = event.seq
    session.last_update_time = event.timestamp
