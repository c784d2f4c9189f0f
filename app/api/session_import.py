"""Session imports (a create with `events`), bounded before they cost anything and served in
time slices.

A body of 1.5 M empty events used to be parsed whole (a Python object per event), validated whole
(a model per event) and refused with an error per event: 45 s, 3 GB and a 28 MB answer; a valid
100 k-event import held the event loop for 15 s. Now:

- The body is at most AGENTD_MAX_IMPORT_BYTES (the size-limit middleware) and the route parses it
  member by member, `events` element by element, counting: past AGENTD_MAX_IMPORT_EVENTS it
  answers 413 `import-too-large` without parsing the rest. Each member and each event is checked
  as `JsonRoute` checks a body (depth, unstorable values) on its own bytes.
- Events are validated one by one, in time slices (`TimeSlicer`): other requests are served
  between slices. The 422 keeps the first `MAX_ERRORS` errors and counts the rest.
- The session service checks and writes them in time slices and short units of work too, and
  the answer is serialized event by event.
- The cyclic garbage collector's automatic passes wait while an import is handled: 10 000 events
  are some 250 k live objects, and each full pass over them stalled every request 30-90 ms
  (measured). Reference counting still frees everything as usual; cycles wait until the
  import ends.
"""

import contextlib
import gc
import json
import re
from collections.abc import Callable, Coroutine, Iterator
from typing import Annotated, Any

from fastapi import status
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from pydantic import TypeAdapter, ValidationError
from starlette.requests import Request

from app.api.errors import MAX_ERRORS, TruncatedValidationError
from app.api.json_body import JsonRoute, check_json, parse_json, too_deep
from app.errors import ImportTooLarge
from app.sessions.models import Event, Session
from app.sessions.storage import TimeSlicer
from app.settings import Settings
from app.wire import ClientSupplied, Loc, check_storable, unstorable

_EVENT: TypeAdapter[Event] = TypeAdapter(Annotated[Event, ClientSupplied])
_DECODER = json.JSONDecoder()
_WHITESPACE = re.compile(r"[ \t\n\r]*")
_EMPTY_EVENTS = '"events":[]'


#: How many requests are in `_collection_paused`, and whether collection was on before the first.
_paused = {"count": 0, "was_enabled": False}


@contextlib.contextmanager
def _collection_paused() -> Iterator[None]:
    """Automatic cyclic collection off while any import is handled (see the module docstring)."""
    if _paused["count"] == 0:
        _paused["was_enabled"] = gc.isenabled()
        gc.disable()
    _paused["count"] += 1
    try:
        yield
    finally:
        _paused["count"] -= 1
        if _paused["count"] == 0 and _paused["was_enabled"]:
            gc.enable()


class SessionImportRoute(JsonRoute):
    """The create-session route: its body parsed with the import's bounds (`ImportParser`),
    handled with automatic garbage collection paused."""

    async def parse_body(self, body: bytes, settings: Settings) -> Any:
        """The checked body; never ValueError, so FastAPI never parses it whole."""
        return await ImportParser(body, settings).parse()

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handle = super().get_route_handler()

        async def handler(request: Request) -> Response:
            with _collection_paused():
                return await handle(request)

        return handler


class ImportParser:
    """Parses a create body: an object whose `events` array is read element by element."""

    def __init__(self, body: bytes, settings: Settings) -> None:
        self._body = body
        self._max_depth = settings.max_json_depth
        self._max_events = settings.max_import_events
        self._count = 0
        self._slicer = TimeSlicer()
        try:
            self._text = body.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise unstorable(("body", exc.start), "Body is not valid UTF-8.") from exc

    async def parse(self) -> dict[str, Any] | None:
        """The document (None for a JSON null); 422s as FastAPI's and JsonRoute's, 413 past the
        event limit."""
        text = self._text
        at = self._skip(0)
        if not text.startswith("{", at):
            self._check_not_an_object()
            return None
        document: dict[str, Any] = {}
        at = self._skip(at + 1)
        if text.startswith("}", at):
            return self._end(document, at + 1)
        while True:
            key, at = self._value(at)
            if not isinstance(key, str):
                raise _invalid(at, "Expecting property name enclosed in double quotes")
            check_storable({key: None}, ("body",))
            at = self._skip(at)
            if not text.startswith(":", at):
                raise _invalid(at, "Expecting ':' delimiter")
            at = self._skip(at + 1)
            if key == "events" and text.startswith("[", at):
                document[key], at = await self._events(at)
            else:
                start = at
                document[key], at = self._value(at)
                self._check(start, at, document[key], ("body", key), self._max_depth - 1)
            at = self._skip(at)
            if text.startswith(",", at):
                at = self._skip(at + 1)
            elif text.startswith("}", at):
                return self._end(document, at + 1)
            else:
                raise _invalid(at, "Expecting ',' delimiter")

    async def _events(self, at: int) -> tuple[list[Any], int]:
        events: list[Any] = []
        at = self._skip(at + 1)
        if self._text.startswith("]", at):
            return events, at + 1
        while True:
            if self._count >= self._max_events:
                raise _too_many(self._max_events)
            start = at
            event, at = self._value(at)
            loc = ("body", "events", len(events))
            self._check(start, at, event, loc, self._max_depth - 2)
            events.append(event)
            self._count += 1
            await self._slicer.pause_if_due()
            at = self._skip(at)
            if self._text.startswith(",", at):
                at = self._skip(at + 1)
            elif self._text.startswith("]", at):
                return events, at + 1
            else:
                raise _invalid(at, "Expecting ',' delimiter")

    def _check_not_an_object(self) -> None:
        """A 422 unless the body is a JSON null, after the checks every JSON body gets (it holds
        no events to bound, and FastAPI must not parse it again to say it is no object)."""
        try:
            document = parse_json(self._body, ("body",), self._max_depth)
        except json.JSONDecodeError as exc:
            raise _invalid(exc.pos, exc.msg) from None
        if document is not None:
            raise _not_an_object()

    def _value(self, at: int) -> tuple[Any, int]:
        try:
            value, end = _DECODER.raw_decode(self._text, at)
        except json.JSONDecodeError as exc:
            raise _invalid(exc.pos, exc.msg) from None
        except RecursionError:
            raise too_deep(self._body, ("body",), self._max_depth) from None
        return value, end

    def _check(self, start: int, end: int, value: Any, loc: Loc, max_depth: int) -> None:
        check_json(self._text[start:end].encode(), value, loc, max_depth)

    def _skip(self, at: int) -> int:
        match = _WHITESPACE.match(self._text, at)
        return at if match is None else match.end()

    def _end(self, document: dict[str, Any], at: int) -> dict[str, Any]:
        at = self._skip(at)
        if at != len(self._text):
            raise _invalid(at, "Extra data")
        return document


def _invalid(position: int, reason: str) -> RequestValidationError:
    # The error FastAPI gives for a body that is not JSON.
    return RequestValidationError(
        [
            {
                "type": "json_invalid",
                "loc": ("body", position),
                "msg": "JSON decode error",
                "input": {},
                "ctx": {"error": reason},
            }
        ]
    )


def _not_an_object() -> RequestValidationError:
    return RequestValidationError(
        [
            {
                "type": "model_attributes_type",
                "loc": ("body",),
                "msg": "Input should be a valid dictionary or object to extract fields from",
            }
        ]
    )


def _too_many(limit: int) -> ImportTooLarge:
    reason = f"An import holds at most {limit} events (AGENTD_MAX_IMPORT_EVENTS)."
    return ImportTooLarge(
        f"body.events.{limit}: {reason}",
        errors=[{"type": "import_too_large", "loc": ["body", "events", limit], "msg": reason}],
    )


async def validate_events(raw: list[Any], loc: Loc) -> list[Event]:
    """`raw` validated as events one by one in time slices; a 422 listing the first MAX_ERRORS
    errors (without their input: an event may be megabytes) and counting the rest.

    Consumes `raw`: each item is dropped once validated, so the parsed JSON and the models of
    the events are not all alive at once.
    """
    slicer = TimeSlicer()
    events: list[Event] = []
    errors: list[Any] = []
    omitted = 0
    for index, item in enumerate(raw):
        raw[index] = None
        try:
            events.append(_EVENT.validate_python(item))
        except ValidationError as exc:
            found = exc.errors(include_url=False, include_input=False)
            kept = found[: MAX_ERRORS - len(errors)]
            errors.extend({**error, "loc": (*loc, index, *error["loc"])} for error in kept)
            omitted += len(found) - len(kept)
        await slicer.pause_if_due()
    if errors:
        raise TruncatedValidationError(errors, omitted)
    return events


async def created_response(session: Session) -> Response:
    """201 with the session as JSON (its ETag the last seq), serialized event by event in time
    slices; the same bytes as serializing the session at once."""
    head = session.model_copy(update={"events": []}).model_dump_json(
        by_alias=True, exclude_none=True
    )
    slicer = TimeSlicer()
    events: list[str] = []
    for event in session.events:
        events.append(event.model_dump_json(by_alias=True, exclude_none=True))
        await slicer.pause_if_due()
    # `events` follows `state` and precedes only scalars: the last match is the member itself.
    at = head.rfind(_EMPTY_EVENTS)
    body = f'{head[:at]}"events":[{",".join(events)}]{head[at + len(_EMPTY_EVENTS) :]}'
    return Response(
        body,
        status_code=status.HTTP_201_CREATED,
        media_type="application/json",
        headers={"ETag": f'"{session.last_seq}"'},
    )
