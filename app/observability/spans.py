"""Recent spans of this process's invocations, in memory with a bound, for ADK's dev UI Trace pane.

ADK's dev server keeps every finished OpenTelemetry span in memory and answers
`/dev/apps/{app}/debug/trace/session/{sid}` with the spans of the session's traces and
`/debug/trace/{event_id}` with the attributes of the model or tool span that produced an event
(`google/adk/cli/api_server.py`: `InMemoryExporter`, `ApiServerSpanExporter`;
`google/adk/telemetry/_web_ui.py`: `WebUiSpan`). agentd records the same spans itself
(`app.plugins.span_recorder`) without needing an OpenTelemetry SDK: a span here is a few
timestamps and attributes, so recording costs a dict and a deque append per agent, model call
and tool call. The store is bounded (oldest spans go first) and per process: spans of runs
executed by a separate worker process are not seen by the API process.

Two bounds, because the spans themselves are small but what their details point at is not: a
model call's request holds the conversation, so keeping it for every kept span grew memory with
the square of a session's length (300 turns of one session: 310 MB). Details (the request,
response and tool JSON, computed when read) are kept for the latest `MAX_DETAILED` spans only;
an older span keeps its name, times, ids and token counts. And a request keeps its latest
`MAX_REQUEST_CONTENTS` contents (`agentd.llm_request.contents_omitted` says how many went).
"""

import random
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from app.errors import NotFoundError

#: Spans kept per process; older ones are dropped first.
MAX_SPANS = 10_000
#: Sessions and events indexed; older entries are dropped first (their spans may be gone too).
MAX_INDEXED = 10_000
#: Spans whose details (request, response, tool arguments and result) are kept; older ones
#: lose them first.
MAX_DETAILED = 200
#: Contents of a model call's request kept for the trace (the latest ones).
MAX_REQUEST_CONTENTS = 20

#: A span attribute computed when it is read (the request/response JSON), so recording stays cheap.
LazyAttribute = Callable[[], Any]


@dataclass(slots=True)
class Span:
    """One finished or running span, in ADK's WebUiSpan terms (times in Unix nanoseconds)."""

    name: str
    trace_id: int
    span_id: int
    parent_span_id: int | None
    app_name: str
    user_id: str
    session_id: str
    start_time: int = field(default_factory=time.time_ns)
    end_time: int | None = None
    attributes: dict[str, Any] = field(default_factory=dict)
    lazy: dict[str, LazyAttribute] = field(default_factory=dict)
    #: The store dropped this span's details (`MAX_DETAILED`); later ones are not kept either.
    details_dropped: bool = False

    def detail(self, key: str, compute: LazyAttribute) -> None:
        """Attribute `key`, computed by `compute` when read, unless the details were dropped."""
        if not self.details_dropped:
            self.lazy[key] = compute

    def drop_details(self) -> None:
        """Forget the details, and whatever they hold on to."""
        self.details_dropped = True
        self.lazy.clear()

    def end(self) -> None:
        """Mark the span finished now (only the first end counts)."""
        if self.end_time is None:
            self.end_time = time.time_ns()

    def resolved_attributes(self) -> dict[str, Any]:
        """The attributes with the lazy ones computed (a failing one reads `<not serializable>`)."""
        attributes = dict(self.attributes)
        for key, compute in self.lazy.items():
            try:
                attributes[key] = compute()
            except Exception:  # a value that cannot be serialized must not break the trace view
                attributes[key] = "<not serializable>"
        return attributes

    def as_web_ui_span(self) -> dict[str, Any]:
        """ADK's `WebUiSpan`: name, times, ids, parent, attributes and (no) logs."""
        return {
            "name": self.name,
            "start_time": self.start_time,
            "end_time": self.end_time,
            "trace_id": self.trace_id,
            "span_id": self.span_id,
            "parent_span_id": self.parent_span_id,
            "attributes": self.resolved_attributes(),
            "logs": [],
        }


def new_trace_id() -> int:
    """A random 128-bit trace id, as OpenTelemetry makes them."""
    return random.getrandbits(128)


def new_span_id() -> int:
    """A random 64-bit span id, as OpenTelemetry makes them."""
    return random.getrandbits(64)


class SpanStore:
    """The recent spans, by session (its traces) and by event (the span that produced it)."""

    def __init__(
        self,
        max_spans: int = MAX_SPANS,
        max_indexed: int = MAX_INDEXED,
        max_detailed: int = MAX_DETAILED,
    ) -> None:
        self._spans: deque[Span] = deque(maxlen=max_spans)
        self._max_spans = max_spans
        self._detailed: deque[Span] = deque()
        self._max_detailed = max_detailed
        #: Each session's trace ids, oldest first (a dict as an ordered set: a long session's
        #: 10,000th trace must not cost a scan of the 9,999 before it).
        self._traces: OrderedDict[tuple[str, str], dict[int, None]] = OrderedDict()
        self._events: OrderedDict[str, Span] = OrderedDict()
        self._max_indexed = max_indexed
        self._lock = threading.Lock()

    def add(self, span: Span, *, detailed: bool = False) -> None:
        """Keep `span` (running or finished) and index its trace under its session; `detailed`:
        it will carry details (`Span.detail`), which only the latest `max_detailed` keep."""
        with self._lock:
            self._spans.append(span)
            if detailed:
                self._detailed.append(span)
                if len(self._detailed) > self._max_detailed:
                    self._detailed.popleft().drop_details()
            key = (span.app_name, span.session_id)
            traces = self._traces.get(key)
            if traces is None:
                traces = self._traces[key] = {}
                if len(self._traces) > self._max_indexed:
                    self._traces.popitem(last=False)
            if span.trace_id not in traces:
                traces[span.trace_id] = None
                if len(traces) > self._max_spans:  # older ones hold no kept span
                    del traces[next(iter(traces))]

    def link_event(self, event_id: str, span: Span) -> None:
        """`span` produced event `event_id` (ADK's `gcp.vertex.agent.event_id`)."""
        span.attributes["gcp.vertex.agent.event_id"] = event_id
        with self._lock:
            self._events[event_id] = span
            self._events.move_to_end(event_id)
            if len(self._events) > self._max_indexed:
                self._events.popitem(last=False)

    def session_spans(self, app_name: str, session_id: str) -> list[Span]:
        """The kept spans of the session's traces, oldest first."""
        with self._lock:
            traces = set(self._traces.get((app_name, session_id), ()))
            return [span for span in self._spans if span.trace_id in traces]

    def event_span(self, app_name: str, event_id: str) -> Span | None:
        """The span that produced `event_id` in `app_name`, if it is still kept."""
        with self._lock:
            span = self._events.get(event_id)
        return span if span is not None and span.app_name == app_name else None


_store = SpanStore()


def span_store() -> SpanStore:
    """This process's span store."""
    return _store


class TraceNotFound(NotFoundError):
    """No kept span produced that event (unknown, evicted, or recorded by another process)."""

    problem_type = "trace-not-found"
    default_title = "Trace not found."
