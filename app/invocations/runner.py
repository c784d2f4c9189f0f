"""The Runner: runs an app's agent tree for one new user message and persists what it yields.

Without a new message it continues an invocation of the session under that invocation's id
(a resumed invocation): the agents go on from the stored history, in which the failure handling
answered every call the invocation left open, so the model sees a complete history.

Every non-partial event is appended through `SessionService.append_event` before it is handed to
the caller, together with the artifact version rows its artifactDelta names (staged earlier in
the invocation), in one transaction; the agent is suspended meanwhile, so it continues from the
committed state. Partial (streaming) events are yielded but never stored. If anything raises
(a callback, a tool, the model, max_llm_calls), a typed error event is persisted and yielded and
the error is raised to the caller: what the failed step staged (state, artifacts) is never
written, and everything persisted before it is whole.
"""

import asyncio
import contextlib
import queue
import threading
from collections.abc import AsyncGenerator, Generator, Sequence
from typing import Any

from google.genai import types

from app.agents.base_agent import BaseAgent
from app.agents.resume import agent_to_run, resume_async, resume_point
from app.artifacts.base import BaseArtifactService
from app.artifacts.in_memory import InMemoryArtifactService
from app.contexts.invocation import InvocationContext, RunConfig
from app.errors import AgentdError, InvocationFailed, LeaseLost, SessionNotFound
from app.invocations.app_config import App, ResumabilityConfig
from app.invocations.compaction import compact_session
from app.memory.base import BaseMemoryService
from app.memory.in_memory import InMemoryMemoryService
from app.plugins.base_plugin import BasePlugin
from app.plugins.manager import PluginManager, merge_event
from app.sessions.base import BaseSessionService, NewArtifactVersion
from app.sessions.fence import Fence
from app.sessions.function_calls import error_responses, open_function_calls
from app.sessions.in_memory import InMemorySessionService
from app.sessions.models import Event, EventActions, NodeInfo, new_invocation_id

# InvocationFailed is re-exported: ADK-style code imports it from the Runner's module.
__all__ = ["App", "InMemoryRunner", "InvocationFailed", "ResumabilityConfig", "Runner"]


class Runner:
    """Runs one app against a session service (and optional artifact and memory services)."""

    def __init__(
        self,
        *,
        session_service: BaseSessionService,
        app_name: str | None = None,
        agent: BaseAgent | None = None,
        app: App | None = None,
        artifact_service: BaseArtifactService | None = None,
        memory_service: BaseMemoryService | None = None,
        plugins: Sequence[BasePlugin] | None = None,
        exclusive_sessions: bool = False,
    ) -> None:
        """Args (beyond ADK's):
        exclusive_sessions: the caller guarantees one invocation per session at a time (agentd's
            invocation manager holds the session's lease). The run's events are then appended
            after whatever REST writes landed meanwhile (a PATCH of state), instead of failing
            with SessionConflict as two uncoordinated runners of one session must.
        """
        self.app = app
        if app is not None:
            agent = app.root_agent
            app_name = app_name or app.name
            plugins = [*app.plugins, *(plugins or [])]
        if agent is None or not app_name:
            raise ValueError("Runner needs either app=App(...) or both app_name and agent.")
        self.app_name = app_name
        self.agent = agent
        self.session_service = session_service
        if artifact_service is not None:
            artifact_service.bind_session_service(session_service)
        self.artifact_service = artifact_service
        self.memory_service = memory_service
        self.plugin_manager = PluginManager(plugins or [])
        self.exclusive_sessions = exclusive_sessions

    async def run_async(
        self,
        *,
        user_id: str,
        session_id: str,
        new_message: types.Content | None = None,
        state_delta: dict[str, Any] | None = None,
        run_config: RunConfig | None = None,
        invocation_id: str | None = None,
    ) -> AsyncGenerator[Event, None]:
        """Run the app for `new_message`; yields every agent event (ADK's `Runner.run_async`).

        The user's message is stored as the invocation's first event but not yielded, as in
        ADK; `run_invocation` yields it too. Arguments as for `run_invocation`.

        With the App's `events_compaction_config`, a compaction that is due runs once the last
        event was handed over, before the generator ends (as ADK's does); it never fails the
        run. (The server runs it in the background instead: `app.invocations.run_task`.)
        """
        first = new_message is not None
        ran: str | None = None
        async for event in self.run_invocation(
            user_id=user_id,
            session_id=session_id,
            new_message=new_message,
            state_delta=state_delta,
            run_config=run_config,
            invocation_id=invocation_id,
        ):
            ran = event.invocation_id
            if first:  # the stored user event
                first = False
                continue
            yield event
        if ran is not None and self.app is not None and self.app.events_compaction_config:
            await compact_session(
                self.app,
                self.session_service,
                app_name=self.app_name,
                user_id=user_id,
                session_id=session_id,
                after_invocation=ran,
            )

    async def run_invocation(
        self,
        *,
        user_id: str,
        session_id: str,
        new_message: types.Content | None = None,
        state_delta: dict[str, Any] | None = None,
        run_config: RunConfig | None = None,
        invocation_id: str | None = None,
        user_event_id: str | None = None,
        recover: bool = False,
        fence: Fence | None = None,
    ) -> AsyncGenerator[Event, None]:
        """Run the app for `new_message`; yields the stored user event, then every agent event.

        The server's invocations publish both (a client following an invocation sees the
        message it answers); `run_async` is ADK's view without the user's event.

        Args (beyond ADK's):
            new_message: None continues invocation `invocation_id` from the session's history;
                no user event is stored, and `state_delta` must be None.
            run_config: its `custom_metadata` is kept on the user event.
            user_event_id: the id the user event is stored under. When recovering, if the
                session already has it, an earlier attempt stored the message: not again.
            recover: the process that ran the invocation died; continue it from its last
                committed event (`app.agents.resume.resume_point`): completed model and tool
                steps are not redone, the calls of a model response without stored responses
                run again.
            fence: the lease the run holds; each of its writes commits only while it holds,
                and LeaseLost (raised as it is, nothing recorded) ends the run once it does not.
        """
        if new_message is None and (invocation_id is None or state_delta):
            raise ValueError("A run without new_message continues invocation_id, with no delta.")
        session = await self.session_service.get_session(
            app_name=self.app_name, user_id=user_id, session_id=session_id
        )
        if session is None:
            raise SessionNotFound(f"Session {session_id!r} does not exist.")
        if recover and user_event_id is not None and _has_event(session.events, user_event_id):
            new_message, state_delta = None, None  # an earlier attempt stored it
        invocation_id = invocation_id or new_invocation_id()
        ctx = InvocationContext(
            session_service=self.session_service,
            invocation_id=invocation_id,
            agent=self.agent,
            session=session,
            user_content=(
                new_message
                if new_message is not None
                else _first_user_content(session.events, invocation_id)
            ),
            run_config=run_config,
            artifact_service=self.artifact_service,
            memory_service=self.memory_service,
            plugin_manager=self.plugin_manager,
        )
        ctx.shared.fence = fence
        if new_message is not None:
            replaced = await self.plugin_manager.run(
                "on_user_message_callback", invocation_context=ctx, user_message=new_message
            )
            if replaced is not None:
                new_message = ctx.user_content = replaced
            metadata = ctx.run_config.custom_metadata
            user_event = Event(
                **({"id": user_event_id} if user_event_id is not None else {}),
                author="user",
                invocation_id=ctx.invocation_id,
                content=new_message,
                actions=EventActions(state_delta=dict(state_delta or {})),
                custom_metadata=dict(metadata) if metadata else None,
            )
            yield await self._append(ctx, user_event)
        point = resume_point(
            self.agent,
            ctx.session.events,
            ctx.invocation_id,
            recover=recover and new_message is None,
        )
        if point is not None and point.stops:
            return
        agent = point.agent if point is not None else agent_to_run(self.agent, ctx.session.events)
        ctx.shared.recovering = point is not None and point.recovered
        try:
            reply = await self.plugin_manager.run("before_run_callback", invocation_context=ctx)
            if reply is not None:
                yield await self._append(ctx, agent.make_event(ctx, content=reply))
                return
            steps = agent.run_async(ctx) if point is None else resume_async(point, ctx)
            async for event in steps:
                replacement = await self.plugin_manager.run(
                    "on_event_callback", invocation_context=ctx, event=event
                )
                event = merge_event(event, replacement)
                yield event if event.partial else await self._append(ctx, event)
            await self.plugin_manager.run("after_run_callback", invocation_context=ctx)
        except (GeneratorExit, asyncio.CancelledError, LeaseLost):
            raise  # LeaseLost: another attempt owns the invocation, and records its failures
        except Exception as exc:
            await self.plugin_manager.notify(
                "on_run_error_callback", invocation_context=ctx, error=exc
            )
            for recorded in await self._record_failure(ctx, agent, exc):
                yield recorded
            if isinstance(exc, AgentdError):
                raise
            raise InvocationFailed(f"{type(exc).__name__}: {exc}") from exc

    async def close(self) -> None:
        """Release what the runner holds: its plugins' `close` hooks (ADK's `Runner.close`)."""
        await self.plugin_manager.close()

    def run(
        self,
        *,
        user_id: str,
        session_id: str,
        new_message: types.Content,
        state_delta: dict[str, Any] | None = None,
        run_config: RunConfig | None = None,
    ) -> Generator[Event, None, None]:
        """Synchronous `run_async` for scripts (ADK's `Runner.run`): runs it in a thread."""
        events: queue.Queue[Event | BaseException | None] = queue.Queue()

        async def produce() -> None:
            try:
                async for event in self.run_async(
                    user_id=user_id,
                    session_id=session_id,
                    new_message=new_message,
                    state_delta=state_delta,
                    run_config=run_config,
                ):
                    events.put(event)
            except BaseException as exc:  # handed to the consuming thread
                events.put(exc)
            finally:
                events.put(None)

        thread = threading.Thread(target=lambda: asyncio.run(produce()), daemon=True)
        thread.start()
        while (item := events.get()) is not None:
            if isinstance(item, BaseException):
                thread.join()
                raise item
            yield item
        thread.join()

    async def _append(self, ctx: InvocationContext, event: Event) -> Event:
        rows: list[NewArtifactVersion] = []
        pending = ctx.shared.pending_artifacts
        for name, version in event.actions.artifact_delta.items():
            staged = pending.pop((name, version), None)
            if staged is not None:
                rows.append(staged)
        commit = asyncio.ensure_future(
            self.session_service.append_event(
                ctx.session,
                event,
                artifact_versions=rows,
                blind=self.exclusive_sessions,
                fence=ctx.shared.fence,
            )
        )
        try:
            return await asyncio.shield(commit)
        except asyncio.CancelledError:
            # Cancelled mid-commit: let the commit finish (it is all-or-nothing anyway), so the
            # session's last_seq and history agree when the next invocation starts; then stop.
            with contextlib.suppress(Exception):
                await commit
            raise

    async def _record_failure(
        self, ctx: InvocationContext, agent: BaseAgent, exc: Exception
    ) -> list[Event]:
        """Persist the answers to the calls left open and the error event; those persisted."""
        code = exc.type if isinstance(exc, AgentdError) else type(exc).__name__
        detail = exc.detail if isinstance(exc, AgentdError) else None
        # What storage refuses (a NUL, a lone surrogate) must not cost the failure its record.
        message = _storable_text(detail or str(exc) or type(exc).__name__)
        event = Event(
            invocation_id=ctx.invocation_id,
            author=agent.name,
            error_code=code,
            error_message=message,
            node_info=NodeInfo(path=f"{agent.name}@1"),
        )
        ctx.shared.pending_artifacts.clear()
        own = (e for e in ctx.session.events if e.invocation_id == ctx.invocation_id)
        answers = error_responses(
            ctx.invocation_id, open_function_calls(own), {"type": code, "detail": message}
        )
        recorded: list[Event] = []
        try:
            # Blind: the failure is a fact whatever else was appended meanwhile, and a run that
            # fails must end with its error event. The calls the failed step left open are
            # answered first, so the history stays valid for every model provider.
            if answers is not None:
                recorded.append(
                    await self.session_service.append_event(
                        ctx.session, answers, blind=True, fence=ctx.shared.fence
                    )
                )
            recorded.append(
                await self.session_service.append_event(
                    ctx.session, event, blind=True, fence=ctx.shared.fence
                )
            )
        except AgentdError:
            # The session vanished or the database is down: the original error is what the
            # caller needs.
            pass
        return recorded


def _has_event(events: Sequence[Event], event_id: str) -> bool:
    return any(e.id == event_id for e in reversed(events))


def _first_user_content(events: Sequence[Event], invocation_id: str) -> types.Content | None:
    """What the user said to start the invocation (a resumed run's `user_content`)."""
    for event in events:
        if event.invocation_id == invocation_id and event.author == "user" and event.content:
            return event.content
    return None


class InMemoryRunner(Runner):
    """A Runner with in-memory session, artifact and memory services (ADK's InMemoryRunner).

    Takes an agent or an `App`, and plugins, as ADK's does; the app name defaults to the App's
    name, else "InMemoryRunner".
    """

    def __init__(
        self,
        agent: BaseAgent | None = None,
        *,
        app_name: str | None = None,
        plugins: Sequence[BasePlugin] | None = None,
        app: App | None = None,
    ) -> None:
        sessions = InMemorySessionService()
        super().__init__(
            app_name=app_name or (app.name if app is not None else "InMemoryRunner"),
            agent=agent,
            app=app,
            plugins=plugins,
            session_service=sessions,
            artifact_service=InMemoryArtifactService(session_service=sessions),
            memory_service=InMemoryMemoryService(),
        )


def _storable_text(text: str) -> str:
    """`text` with what no database keeps in a string (NUL, lone surrogates) replaced."""
    return text.encode("utf-8", "replace").decode().replace("\x00", "\ufffd")
