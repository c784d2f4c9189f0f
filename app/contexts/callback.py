"""CallbackContext: the mutable view callbacks get; writes ride on the event being built.

State writes go through `State`, which records them in this context's EventActions.state_delta
(persisted with the event the context belongs to) and applies them to the invocation's session
state at once, so every later read in the invocation sees them. Artifacts saved here are staged
(bytes stored, version allocated) and recorded in artifact_delta; their version rows commit with
that event, and until then only this invocation can load them.
"""

from typing import Any

from google.genai import types

from app.artifacts.base import ArtifactScope, BaseArtifactService
from app.contexts.invocation import InvocationContext
from app.contexts.readonly import ReadonlyContext
from app.errors import ArtifactNotFound
from app.sessions.models import EventActions
from app.sessions.state import State


class CallbackContext(ReadonlyContext):
    """What agent and model callbacks (and, via ToolContext, tools) may read and change."""

    def __init__(
        self,
        invocation_context: InvocationContext,
        *,
        event_actions: EventActions | None = None,
    ) -> None:
        super().__init__(invocation_context)
        self._event_actions = event_actions or EventActions()
        self._state = State(
            value=invocation_context.session.state, delta=self._event_actions.state_delta
        )

    @property
    def state(self) -> State:
        """The session state; writes are recorded in the current event's state delta."""
        return self._state

    @property
    def event_actions(self) -> EventActions:
        """The actions of the event this context's changes ride on."""
        return self._event_actions

    def _artifacts(self) -> tuple[BaseArtifactService, ArtifactScope]:
        service = self._invocation_context.artifact_service
        if service is None:
            raise ValueError("Artifact service is not initialized.")
        context = self._invocation_context
        return service, ArtifactScope(context.app_name, context.user_id, context.session.id)

    async def save_artifact(
        self,
        filename: str,
        artifact: types.Part,
        custom_metadata: dict[str, Any] | None = None,
    ) -> int:
        """Save a new version of `filename`; it becomes visible when this event commits."""
        service, scope = self._artifacts()
        staged = await service.stage_part(
            scope, filename=filename, artifact=artifact, custom_metadata=custom_metadata
        )
        self._invocation_context.shared.pending_artifacts[(filename, staged.version)] = staged
        self._event_actions.artifact_delta[filename] = staged.version
        return staged.version

    async def load_artifact(self, filename: str, version: int | None = None) -> types.Part | None:
        """A version of `filename` (latest if None), including ones saved earlier in this run."""
        service, scope = self._artifacts()
        pending = self._invocation_context.shared.pending_artifacts
        versions = [v for (name, v) in pending if name == filename]
        wanted = max(versions) if version is None and versions else version
        staged = pending.get((filename, wanted)) if wanted is not None else None
        if staged is not None:
            return await service.load_staged(staged)
        try:
            return await service.load_part(scope, filename=filename, version=version)
        except ArtifactNotFound:
            return None

    async def list_artifacts(self) -> list[str]:
        """Names of the session's and the user's artifacts, including ones saved in this run."""
        service, scope = self._artifacts()
        names = set(await service.list_names(scope))
        names.update(name for (name, _) in self._invocation_context.shared.pending_artifacts)
        return sorted(names)
