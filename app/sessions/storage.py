"""Turning events and state into what session storage holds, checked before any write.

Both session services (database and in-memory) and the invocation store use these, so every
write path refuses the same values with the same problems: unstorable values, oversized events
and state, invalid imports.

An import checks thousands of events (tens of microseconds each) on the event loop; it does so in
time slices (`TimeSlicer`), so other requests are served while it runs.
"""

import asyncio
import json
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic_core import PydanticSerializationError

from app.errors import (
    AgentdError,
    EventTooLarge,
    InvalidRequest,
    StateTooLarge,
    UnstorableValue,
)
from app.sessions.models import Event
from app.sessions.state import ScopedDelta, State, persistable_delta, split_delta
from app.wire import Loc, check_storable, validate_id

#: An event id as the events table holds it.
MAX_EVENT_ID_LENGTH = 128


@dataclass(frozen=True)
class StorageLimits:
    """Size limits a session service enforces (as JSON bytes), so no write can bloat a session."""

    max_event_bytes: int = 2 * 1024 * 1024
    max_state_bytes: int = 1024 * 1024

    def check_state(self, state: dict[str, Any]) -> None:
        """Raise StateTooLarge if `state` is over the limit."""
        size = self.state_size(state)
        if size > self.max_state_bytes:
            raise StateTooLarge(
                f"The session state would be {size} bytes; the limit is {self.max_state_bytes}."
            )

    @staticmethod
    def state_size(state: dict[str, Any]) -> int:
        """The size of `state` as JSON, the measure of `max_state_bytes`."""
        return len(json.dumps(state, separators=(",", ":")))


def check_event_values(event: Event) -> None:
    """Raise UnstorableValue naming the field if the event's free-form values cannot be stored.

    State deltas, metadata, function call arguments and responses come from tools, callbacks and
    models as arbitrary Python values; pydantic would serialise NaN as null (a silent change), so
    they are checked before serialising. Typed fields are checked by the encoding that follows.
    """
    check_storable(event.actions.state_delta, ("actions", "stateDelta"))
    if event.custom_metadata:
        check_storable(event.custom_metadata, ("customMetadata",))
    if event.content is None or not event.content.parts:
        return
    for index, part in enumerate(event.content.parts):
        loc = ("content", "parts", index)
        if part.function_call is not None and part.function_call.args:
            check_storable(part.function_call.args, (*loc, "functionCall", "args"))
        if part.function_response is not None and part.function_response.response:
            check_storable(part.function_response.response, (*loc, "functionResponse", "response"))


def session_id_or_new(session_id: str | None) -> str:
    """The caller's session id if valid (InvalidIdentifier if not), else a new uuid4 (ADK's form,
    with dashes)."""
    return str(uuid.uuid4()) if session_id is None else validate_id("sessionId", session_id)


def event_row(
    session_pk: int, seq: int, event: Event, wire: dict[str, Any] | bytes
) -> dict[str, Any]:
    """The events-table row of `event` at `seq` (its wire JSON from `prepare_event`, or that
    JSON encoded, from `encode_event`)."""
    return {
        "session_pk": session_pk,
        "seq": seq,
        "id": event.id,
        "invocation_id": event.invocation_id,
        "author": event.author,
        "timestamp": event.timestamp,
        "event": wire,
    }


class TimeSlicer:
    """Lets a long loop on the event loop give other tasks a turn every `seconds`."""

    def __init__(self, seconds: float = 0.01) -> None:
        self._seconds = seconds
        self._due = time.perf_counter() + seconds

    async def pause_if_due(self) -> None:
        """Yield to the event loop if the current slice is used up."""
        if time.perf_counter() >= self._due:
            await asyncio.sleep(0)
            self._due = time.perf_counter() + self._seconds


def prepare_event(
    event: Event, limits: StorageLimits | None = None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Strip `temp:` keys from the event and serialise it for storage.

    Returns the wire JSON (without `seq`) and the removed temp delta. Serialising here, before any
    database work, turns a non-JSON state value into a clean UnstorableValue and an oversized
    event into EventTooLarge.
    """
    wire, temp, _ = encode_event(event, limits)
    return wire, temp


def encode_event(
    event: Event, limits: StorageLimits | None = None
) -> tuple[dict[str, Any], dict[str, Any], bytes]:
    """`prepare_event`, also returning the wire JSON encoded as the database holds it."""
    delta = event.actions.state_delta
    temp = {k: v for k, v in delta.items() if k.startswith(State.TEMP_PREFIX)}
    if temp:
        event.actions.state_delta = persistable_delta(delta)
    check_event_values(event)
    try:
        wire = event.model_dump(mode="json", by_alias=True, exclude_none=True, exclude={"seq"})
        # Encoded as the database will hold it: what is still unstorable (a surrogate in a typed
        # field) fails here, before any database work, and the size is the stored size.
        encoded = json.dumps(
            wire, allow_nan=False, ensure_ascii=False, separators=(",", ":")
        ).encode()
    except (ValueError, TypeError, PydanticSerializationError) as exc:
        raise UnstorableValue(f"The event cannot be stored as JSON: {exc}") from exc
    if b"\\u0000" in encoded:
        # A NUL in a typed field (a message's text, an id): PostgreSQL refuses it, so it is
        # refused on every backend. The bytes may only hold an escaped backslash before
        # `u0000`; the walk tells.
        check_storable(wire, ())
    if limits is not None:
        size = len(encoded)
        if size > limits.max_event_bytes:
            raise EventTooLarge(
                f"The event is {size} bytes as JSON; the limit is {limits.max_event_bytes}."
            )
    return wire, temp, encoded


@dataclass
class PreparedImport:
    """A session import, checked and serialised: what `import_session` stores."""

    #: Each event's wire JSON (without `seq`), in the given order.
    events: list[dict[str, Any]]
    #: The state the import leaves: the session's own keys, and the `app:` and `user:` keys to
    #: write (the initial state's, then each event's delta, later values winning).
    state: ScopedDelta
    #: Each event's wire JSON encoded as the database holds it (so it is encoded only once).
    encoded: list[bytes] = field(default_factory=list)


class ImportPreparer:
    """Checks and serialises an import one event at a time (`add`), as appends would check its
    events one by one; `finish` gives what `import_session` stores.

    Raises what append and create raise, each problem naming the field (`errors[].loc`, and
    `detail`) under `(*loc, "events", index)` or `(*loc, "state")`; a partial event, a
    repeated or unstorable event id are InvalidRequest.
    """

    def __init__(self, state: dict[str, Any] | None, limits: StorageLimits, loc: Loc = ()) -> None:
        check_storable(state or {}, (*loc, "state"))
        self._limits = limits
        self._loc = loc
        self._initial = split_delta(state or {})
        self.prepared = PreparedImport(
            events=[], state=ScopedDelta(session=dict(self._initial.session))
        )
        self.prepared.state.app.update(self._initial.app)
        self.prepared.state.user.update(self._initial.user)
        self._session_deltas: list[dict[str, Any]] = []
        self._indexes: dict[str, int] = {}

    def add(self, event: Event) -> None:
        """Check and serialise the next event."""
        index = len(self.prepared.events)
        where = (*self._loc, "events", index)
        if event.partial:
            raise _invalid_event(
                (*where, "partial"), "A partial event (a streamed chunk) is never stored."
            )
        if not 0 < len(event.id) <= MAX_EVENT_ID_LENGTH:
            raise _invalid_event(
                (*where, "id"), f"An event id has 1 to {MAX_EVENT_ID_LENGTH} characters."
            )
        if event.id in self._indexes:
            raise _invalid_event(
                (*where, "id"),
                f"Event id {event.id!r} is also the id of event {self._indexes[event.id]}.",
            )
        self._indexes[event.id] = index
        try:
            wire, _, encoded = encode_event(event, self._limits)
        except AgentdError as exc:
            raise _located(exc, where) from None
        delta = split_delta(wire["actions"].get("stateDelta", {}))
        self.prepared.events.append(wire)
        self.prepared.encoded.append(encoded)
        self.prepared.state.session.update(delta.session)
        self.prepared.state.app.update(delta.app)
        self.prepared.state.user.update(delta.user)
        self._session_deltas.append(delta.session)

    def finish(self) -> PreparedImport:
        """The prepared import; StateTooLarge if the session state it leaves is over the limit."""
        limits = self._limits
        if limits.state_size(self.prepared.state.session) > limits.max_state_bytes:
            raise _state_too_large(self._initial.session, self._session_deltas, limits, self._loc)
        return self.prepared


def prepare_import(
    state: dict[str, Any] | None,
    events: Sequence[Event],
    limits: StorageLimits,
    *,
    loc: Loc = (),
) -> PreparedImport:
    """Check an import as appends would check its events one by one, and serialise it (see
    `ImportPreparer`)."""
    preparer = ImportPreparer(state, limits, loc)
    for event in events:
        preparer.add(event)
    return preparer.finish()


async def prepare_import_sliced(
    state: dict[str, Any] | None,
    events: Sequence[Event],
    limits: StorageLimits,
    *,
    loc: Loc = (),
) -> PreparedImport:
    """`prepare_import` in time slices, so a large import does not hold up the event loop."""
    preparer = ImportPreparer(state, limits, loc)
    slicer = TimeSlicer()
    for event in events:
        preparer.add(event)
        await slicer.pause_if_due()
    return preparer.finish()


def _state_too_large(
    initial: dict[str, Any],
    session_deltas: list[dict[str, Any]],
    limits: StorageLimits,
    loc: Loc,
) -> StateTooLarge:
    """StateTooLarge naming where the session state first goes over the limit: the initial state,
    or the stateDelta of the first event that takes it over (only run once the final state is)."""
    running = dict(initial)
    where: Loc = (*loc, "state")
    size = limits.state_size(running)
    for index, delta in enumerate(session_deltas):
        if size > limits.max_state_bytes:
            break
        running.update(delta)
        size = limits.state_size(running)
        where = (*loc, "events", index, "actions", "stateDelta")
    reason = f"The session state would be {size} bytes; the limit is {limits.max_state_bytes}."
    return StateTooLarge(
        f"{_dotted(where)}: {reason}",
        errors=[{"type": "state_too_large", "loc": list(where), "msg": reason}],
    )


def _invalid_event(where: Loc, reason: str) -> InvalidRequest:
    return InvalidRequest(
        f"{_dotted(where)}: {reason}",
        errors=[{"type": "invalid_event", "loc": list(where), "msg": reason}],
    )


def _located(exc: AgentdError, where: Loc) -> AgentdError:
    """`exc` with the fields it names (or itself, if it names none) moved under `where`."""
    reason = exc.detail or exc.title
    errors = exc.extras.get("errors") or [
        {"type": exc.type.replace("-", "_"), "loc": [], "msg": reason}
    ]
    exc.extras["errors"] = [{**error, "loc": [*where, *error["loc"]]} for error in errors]
    exc.detail = "; ".join(f"{_dotted(e['loc'])}: {e['msg']}" for e in exc.extras["errors"])
    return exc


def _dotted(where: Loc | list[str | int]) -> str:
    return ".".join(str(part) for part in where)
