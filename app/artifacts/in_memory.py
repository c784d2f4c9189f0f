"""ArtifactService kept in process memory: for tests, `InMemoryRunner` and embedded use.

It honours the database service's contract: versions count from 0 per name and are never reused,
`user:` names are shared by the user's sessions, session artifacts die with their session, and a
staged version becomes visible only once the event naming it in its `artifactDelta` commits.
Bytes live in a blob store (an `InMemoryBlobStore` unless one is given).

The database service learns of a commit from the version row the session service inserts with
the event. Here the session service may be any implementation, so the commit is learnt from the
session's events instead: before answering, the service reads the events it has not seen yet
(from the last seq it saw, so each event is read about once) and makes visible every staged
version an event names (`save` does so right after committing its user event). Two corner cases
around deleted sessions differ from the database: a `user:` version committed by an agent's event
is lost if its session is deleted before any artifact read of that user has seen the event, and a
session re-created under the id of one that never committed an event continues that one's version
numbers instead of starting again at 0.

A threading lock (never held across an await) guards the dicts, because ADK's synchronous
`Runner.run` drives the services from an event loop in another thread.
"""

import threading
from dataclasses import dataclass

from app.artifacts.base import ArtifactContent, ArtifactScope, version_metadata
from app.artifacts.blob_backed import BlobBackedArtifactService
from app.artifacts.blobstore import BlobStore, InMemoryBlobStore
from app.artifacts.models import ArtifactVersion, is_user_scoped, validate_artifact_name
from app.errors import ArtifactNotFound, SessionNotFound
from app.sessions.base import BaseSessionService, NewArtifactVersion
from app.sessions.models import Event

#: AGENTD_MAX_ARTIFACT_BYTES's default.
DEFAULT_MAX_ARTIFACT_BYTES = 64 * 1024 * 1024

#: Events read per page while catching up with a session.
_EVENT_PAGE_SIZE = 1000

_SessionKey = tuple[str, str, str]
#: (app, user, session id or '' for a `user:` name, name).
_NameKey = tuple[str, str, str, str]


@dataclass(frozen=True)
class _Seen:
    """The last event read of a session; its id tells a session re-created under the same id."""

    seq: int
    event_id: str


class InMemoryArtifactService(BlobBackedArtifactService):
    """Artifact versions in dicts, bytes in a blob store (in memory by default)."""

    def __init__(
        self,
        *,
        session_service: BaseSessionService,
        blob_store: BlobStore | None = None,
        max_artifact_bytes: int = DEFAULT_MAX_ARTIFACT_BYTES,
    ) -> None:
        super().__init__(
            blob_store or InMemoryBlobStore(),
            max_artifact_bytes=max_artifact_bytes,
            session_service=session_service,
        )
        self._lock = threading.Lock()
        self._next_versions: dict[_NameKey, int] = {}
        self._visible: dict[_NameKey, dict[int, NewArtifactVersion]] = {}
        #: Staged versions whose event has not been seen committed, by the session they await.
        self._pending: dict[_SessionKey, dict[tuple[str, int], NewArtifactVersion]] = {}
        self._seen: dict[_SessionKey, _Seen] = {}

    # -- writes ---------------------------------------------------------------------------

    async def _require_session(self, scope: ArtifactScope) -> None:
        await self._catch_up(_session_key(scope), required=True)

    async def _allocate_version(self, scope: ArtifactScope, filename: str) -> int:
        session = _session_key(scope)
        # Also forgets the counters of a deleted session first, so a re-created one starts at 0.
        await self._catch_up(session, required=True)
        key = _name_key(session, filename)
        with self._lock:
            version = self._next_versions.get(key, 0)
            self._next_versions[key] = version + 1
        return version

    def _remember_staged(self, scope: ArtifactScope, staged: NewArtifactVersion) -> None:
        with self._lock:
            pending = self._pending.setdefault(_session_key(scope), {})
            pending[(staged.name, staged.version)] = staged

    async def save(
        self, sessions: BaseSessionService, scope: ArtifactScope, staged: NewArtifactVersion
    ) -> ArtifactVersion:
        """Commit a staged version through a user event of `sessions` carrying its delta."""
        metadata = await super().save(sessions, scope, staged)
        # Learn of the commit now, so a `user:` version survives its session's deletion even if
        # no read comes first.
        await self._catch_up(_session_key(scope), required=False)
        return metadata

    async def delete(self, scope: ArtifactScope, *, filename: str) -> None:
        """Delete every version of `filename` (its number keeps counting)."""
        validate_artifact_name(filename)
        await self._catch_up_user(scope)
        with self._lock:
            versions = self._visible.pop(_name_key(_session_key(scope), filename), None)
        if not versions:
            raise ArtifactNotFound(f"No artifact named {filename!r}.")

    # -- reads ----------------------------------------------------------------------------

    async def list_names(self, scope: ArtifactScope) -> list[str]:
        """Names of the session's artifacts and the user's `user:` artifacts, sorted."""
        await self._catch_up_user(scope)
        scopes = {scope.session_id, ""}
        with self._lock:
            return sorted(
                name
                for (app, user, scope_id, name), versions in self._visible.items()
                if (app, user) == (scope.app_name, scope.user_id)
                and scope_id in scopes
                and versions
            )

    async def list_version_metadata(
        self, scope: ArtifactScope, *, filename: str
    ) -> list[ArtifactVersion]:
        """Metadata of every version of `filename`, ascending; ArtifactNotFound if none."""
        validate_artifact_name(filename)
        await self._catch_up_user(scope)
        with self._lock:
            versions = dict(self._visible.get(_name_key(_session_key(scope), filename), {}))
        if not versions:
            raise ArtifactNotFound(f"No artifact named {filename!r}.")
        return [version_metadata(scope, versions[v]) for v in sorted(versions)]

    async def get(
        self, scope: ArtifactScope, *, filename: str, version: int | None = None
    ) -> ArtifactContent:
        """One version (latest if None) with its blob key; ArtifactNotFound if absent."""
        validate_artifact_name(filename)
        await self._catch_up_user(scope)
        with self._lock:
            versions = self._visible.get(_name_key(_session_key(scope), filename), {})
            wanted = max(versions, default=None) if version is None else version
            stored = None if wanted is None else versions.get(wanted)
        if stored is None:
            suffix = "" if version is None else f" version {version}"
            raise ArtifactNotFound(f"No artifact named {filename!r}{suffix}.")
        return ArtifactContent(
            metadata=version_metadata(scope, stored), blob_key=stored.blob_key, service=self
        )

    # -- learning what committed ----------------------------------------------------------

    async def _catch_up_user(self, scope: ArtifactScope) -> None:
        """Catch up with the scope's session (SessionNotFound if it is gone) and with every other
        session of the user that has versions staged: their `user:` versions are visible here."""
        own = _session_key(scope)
        await self._catch_up(own, required=True)
        with self._lock:
            others = [key for key in self._pending if key[:2] == own[:2] and key != own]
        for key in others:
            await self._catch_up(key, required=False)

    async def _catch_up(self, session: _SessionKey, *, required: bool) -> None:
        """Make visible what the session's unseen events committed; forget a deleted session."""
        try:
            events = await self._unseen_events(session)
        except SessionNotFound:
            self._forget(session)
            if required:
                raise
            return
        if not events:
            return
        with self._lock:
            pending = self._pending.get(session, {})
            for event in events:
                for name, version in event.actions.artifact_delta.items():
                    staged = pending.pop((name, version), None)
                    if staged is not None:
                        self._visible.setdefault(_name_key(session, name), {})[version] = staged
            if not pending:
                self._pending.pop(session, None)
            last = events[-1]
            seen = self._seen.get(session)
            if last.seq is not None and (seen is None or last.seq > seen.seq):
                self._seen[session] = _Seen(seq=last.seq, event_id=last.id)

    async def _unseen_events(self, session: _SessionKey) -> list[Event]:
        seen = self._seen.get(session)
        if seen is not None:
            # Re-read the last seen event too: if it is not there any more, the session was
            # deleted and created again, and the old one's artifacts died with it.
            events = await self._events_after(session, seen.seq - 1)
            if events and events[0].seq == seen.seq and events[0].id == seen.event_id:
                return events[1:]
            self._forget(session)
        return await self._events_after(session, 0)

    async def _events_after(self, session: _SessionKey, after_seq: int) -> list[Event]:
        app_name, user_id, session_id = session
        events: list[Event] = []
        page_token: str | None = None
        while True:
            page = await self._sessions().list_events(
                app_name=app_name,
                user_id=user_id,
                session_id=session_id,
                after_seq=after_seq,
                page_size=_EVENT_PAGE_SIZE,
                page_token=page_token,
            )
            events.extend(page.events)
            if page.next_page_token is None:
                return events
            page_token = page.next_page_token

    def _forget(self, session: _SessionKey) -> None:
        """Drop what died with a deleted session: its staged versions, artifacts and counters."""
        with self._lock:
            self._pending.pop(session, None)
            self._seen.pop(session, None)
            for store in (self._visible, self._next_versions):
                for key in [key for key in store if key[:3] == session]:
                    del store[key]


def _session_key(scope: ArtifactScope) -> _SessionKey:
    return (scope.app_name, scope.user_id, scope.session_id)


def _name_key(session: _SessionKey, name: str) -> _NameKey:
    app_name, user_id, session_id = session
    return (app_name, user_id, "" if is_user_scoped(name) else session_id, name)


__all__ = ["DEFAULT_MAX_ARTIFACT_BYTES", "InMemoryArtifactService"]
