"""What a run of this process is, and how it ended: the values the run task and its readers share.

`LocalRun` is a run executing here; `RunHandle` is what admission hands back to routers (a run to
wait for or follow); `RunEnd` names how a run ended, as one value: `Ended` (an outcome this
process records) or `LetGo` (handed back to the queue, or held by another attempt).
"""

import asyncio
import enum
from dataclasses import dataclass
from typing import Any

from app.invocations.channel import RunChannel
from app.invocations.models import (
    CreateInvocationRequest,
    Invocation,
    InvocationStatus,
    RequiredAction,
    ResumeInvocationRequest,
    SessionRef,
)
from app.sessions.fence import Fence

#: Where a stored request keeps the id its user event is stored under.
USER_EVENT_ID_KEY = "userEventId"

RunRequest = CreateInvocationRequest | ResumeInvocationRequest


class LetGo(enum.Enum):
    """A run that ended here without its outcome being this process's to record."""

    #: Given back to the queue (this process shuts down): another process continues it.
    HANDED_BACK = "handed_back"
    #: Another attempt holds the invocation (this one stalled past its lease).
    TAKEN_OVER = "taken_over"


@dataclass(frozen=True)
class Ended:
    """A run's outcome, for this process to record."""

    status: InvocationStatus
    error: dict[str, Any] | None = None
    #: With status `requires_action`: the calls the client must answer.
    required_action: dict[str, Any] | None = None


#: How a run ended, as one value.
RunEnd = Ended | LetGo


@dataclass
class LocalRun:
    """A run executing in this process."""

    invocation_id: str
    session_pk: int
    channel: RunChannel
    #: The invocation's create time: with the id, its place in the session's queue.
    create_time: float = 0.0
    #: A resumed invocation's earlier events are those up to this seq (see `StoredInvocation`).
    resumed_after: int = 0
    task: "asyncio.Task[None] | None" = None
    cancel_requested: bool = False
    #: The id its user event is stored under (an attempt that finds it stored does not store it
    #: again).
    user_event_id: str | None = None
    #: Taken over from a process that died: continue from the last committed event.
    recover: bool = False
    #: Taken from the queue (its end may let this process take the next one of its session).
    claimed: bool = False
    #: Set before its task is cancelled when the run is let go (shutdown, takeover).
    let_go: LetGo | None = None
    #: It holds its session's lease (for the lease gauge).
    held: bool = False
    #: Publish its committed events on PostgreSQL (it was claimed: its clients are elsewhere;
    #: or another process said it follows it).
    publish_events: bool = False
    #: What the invocation waited for when this run resumed it (`StoredInvocation.waited_for`):
    #: the calls the run starts from when it tells what still waits at its end.
    waited_for: RequiredAction | None = None
    #: This process's replica id and the invocation's attempt it runs as: the run's fencing
    #: token (the attempt is the row's while queued, set anew when the lease is taken).
    owner: str = ""
    attempt: int = 0

    @property
    def fence(self) -> Fence:
        """The lease every write of this run must still hold (`app.sessions.fence`)."""
        return Fence(self.invocation_id, self.owner, self.attempt)


@dataclass(frozen=True)
class RunHandle:
    """A run to wait for or follow: the invocation, and whether the call that made it created it."""

    ref: SessionRef
    invocation: Invocation
    session_pk: int
    created: bool
    channel: RunChannel | None = None
    #: The events of the run this handle started come after this seq (a resumed invocation's
    #: earlier attempts are not its run's); 0 for every other handle.
    after_seq: int = 0


__all__ = [
    "USER_EVENT_ID_KEY",
    "Ended",
    "LetGo",
    "LocalRun",
    "RunEnd",
    "RunHandle",
    "RunRequest",
]
