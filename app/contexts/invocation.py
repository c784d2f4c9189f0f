"""InvocationContext: everything one run of an app for one user message carries.

The immutable core (services, session, user message, run config, invocation id) is built once by
the Runner; each agent gets a view with its own `agent` and `branch` via `for_agent`, and all views
share one `InvocationShared` (LLM call count, the end flag, artifacts staged but not yet committed),
so a sub-agent ending the invocation or a ParallelAgent's branches counting model calls act on
the one invocation.

The runner's plugins are seen through the `PluginRunner` port, so this layer never loads the
plugins package (which sits above it); `NoPlugins` stands in when no runner supplied any.
"""

import copy
import enum
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from google.genai import types
from pydantic import BaseModel, Field

from app.errors import LlmCallsLimitExceededError
from app.sessions.base import BaseSessionService, NewArtifactVersion
from app.sessions.fence import Fence
from app.sessions.models import Session

if TYPE_CHECKING:
    from app.agents.base_agent import BaseAgent
    from app.artifacts.base import BaseArtifactService
    from app.memory.base import BaseMemoryService
    from app.plugins.base_plugin import BasePlugin

# LlmCallsLimitExceededError is re-exported: ADK code imports it from the context's module.
__all__ = [
    "InvocationContext",
    "InvocationShared",
    "LlmCallsLimitExceededError",
    "NoPlugins",
    "PluginRunner",
    "RunConfig",
    "StreamingMode",
]


class PluginRunner(Protocol):
    """The runner's plugins as the engine uses them (`PluginManager` is the real one)."""

    @property
    def plugins(self) -> "Sequence[BasePlugin]":
        """The plugins, in the order their hooks run (ADK code reads them, e.g. its AgentTool)."""
        ...

    async def run(self, hook: str, **kwargs: Any) -> Any:
        """Call `hook` on each plugin; return the first non-None result."""
        ...


class NoPlugins:
    """The plugins of an invocation built without any: every hook has no opinion."""

    @property
    def plugins(self) -> "Sequence[BasePlugin]":
        """None at all."""
        return ()

    async def run(self, hook: str, **kwargs: Any) -> Any:  # noqa: ARG002 - the port's signature
        """No plugin answers, so there is no result."""
        return None


class StreamingMode(enum.Enum):
    """Whether model answers are streamed as partial events (ADK's values)."""

    NONE = None
    SSE = "sse"


class RunConfig(BaseModel):
    """Per-invocation knobs (ADK's RunConfig subset agentd honours)."""

    streaming_mode: StreamingMode = StreamingMode.NONE
    max_llm_calls: int = Field(default=500, ge=0)
    custom_metadata: dict[str, Any] | None = None
    #: The most tokens of contents a model request may carry (estimated with the model's
    #: `estimate_tokens`): the oldest whole turns are dropped beyond it, the latest never
    #: (`app.agents.contents`). None: no budget.
    max_context_tokens: int | None = Field(default=None, ge=1)


@dataclass
class InvocationShared:
    """Mutable state shared by every agent's view of one invocation."""

    llm_calls: int = 0
    ended: bool = False
    #: The run continues an invocation whose process died (Runner `recover`): the first agent
    #: that starts runs the calls its last model response left without responses.
    recovering: bool = False
    #: Each LlmAgent's tools with its toolsets resolved, by agent name (once per invocation).
    resolved_tools: dict[str, list[Any]] = field(default_factory=dict)
    #: Artifact versions saved in this invocation whose carrying event has not committed yet.
    pending_artifacts: dict[tuple[str, int], NewArtifactVersion] = field(default_factory=dict)
    #: The lease the run writes under (set by the invocation manager): every event the run
    #: appends commits only while it holds (`app.sessions.fence`).
    fence: Fence | None = None


class InvocationContext:
    """One invocation as one agent sees it."""

    def __init__(
        self,
        *,
        session_service: BaseSessionService,
        invocation_id: str,
        agent: "BaseAgent",
        session: Session,
        user_content: types.Content | None = None,
        run_config: RunConfig | None = None,
        artifact_service: "BaseArtifactService | None" = None,
        memory_service: "BaseMemoryService | None" = None,
        plugin_manager: PluginRunner | None = None,
        branch: str | None = None,
        shared: InvocationShared | None = None,
    ) -> None:
        self.session_service = session_service
        self.artifact_service = artifact_service
        self.memory_service = memory_service
        self.plugin_manager: PluginRunner = plugin_manager or NoPlugins()
        self.invocation_id = invocation_id
        self.agent = agent
        self.session = session
        self.user_content = user_content
        self.run_config = run_config or RunConfig()
        self.branch = branch
        self.shared = shared or InvocationShared()
        #: Inside a ParallelAgent branch: that branch's own "paused" flag (see `pause`).
        self.branch_pause: list[bool] | None = None
        #: Inside a LoopAgent: the innermost loop's iteration (events record it in their
        #: `nodeInfo.path`, `<agent>@<iteration>`, so a resume knows where the loop was).
        self.loop_iteration = 1

    @property
    def app_name(self) -> str:
        """The app (session) name."""
        return self.session.app_name

    @property
    def user_id(self) -> str:
        """The user the invocation runs for."""
        return self.session.user_id

    @property
    def ended(self) -> bool:
        """Whether an agent, callback or tool ended the invocation (or paused this branch)."""
        return self.shared.ended or (self.branch_pause is not None and self.branch_pause[0])

    @property
    def end_invocation(self) -> bool:
        """ADK's settable flag form of `ended`."""
        return self.shared.ended

    @end_invocation.setter
    def end_invocation(self, value: bool) -> None:
        self.shared.ended = value

    def end(self) -> None:
        """Stop the invocation after the current step."""
        self.shared.ended = True

    def pause(self) -> None:
        """Stop to wait for the client (a confirmation, a credential, a late result).

        Outside a ParallelAgent this ends the invocation, as `end`. In a parallel branch only
        that branch stops: its siblings run to their end, and the invocation then waits for
        what the branch asked (ADK's branches pause independently).
        """
        if self.branch_pause is not None:
            self.branch_pause[0] = True
        else:
            self.shared.ended = True

    def increment_llm_call_count(self) -> None:
        """Count one model call; raise once max_llm_calls is exceeded (0 means unlimited)."""
        self.shared.llm_calls += 1
        limit = self.run_config.max_llm_calls
        if limit > 0 and self.shared.llm_calls > limit:
            raise LlmCallsLimitExceededError(
                f"The invocation exceeded max_llm_calls={limit}.", maxLlmCalls=limit
            )

    def for_agent(self, agent: "BaseAgent", *, branch: str | None = None) -> "InvocationContext":
        """The view of `agent` (same invocation, its own branch)."""
        return self.replace(agent=agent, branch=self.branch if branch is None else branch)

    def replace(self, **changes: Any) -> "InvocationContext":
        """A copy with `changes` applied; what is not changed (services, `shared`) is shared."""
        unknown = set(changes) - set(vars(self))
        if unknown:
            raise TypeError(f"InvocationContext has no {sorted(unknown)}")
        ctx = copy.copy(self)
        vars(ctx).update(changes)
        return ctx
