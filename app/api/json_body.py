"""JSON request bodies that can be stored as they are, checked before any route runs.

FastAPI parses bodies with Python's json module, which accepts what no JSON column can hold:
lone surrogates (`"\\ud800"`), NaN, Infinity (also a number such as 1e999999 that overflows to
it), integers of any size, and NUL (`"\\u0000"`, which PostgreSQL refuses and SQLite keeps). Left
alone they reach storage as a 5xx, or as a silent change (NaN stored as null). It also follows
nesting as deep as the interpreter's stack allows, and what comes after it does not: orjson
stops at 255 levels, `copy.deepcopy` and pydantic at the recursion limit, so a deep document was
a 500. `JsonRoute` parses the body once and, before the endpoint or any write runs, answers 422
`json-too-deep` when it nests deeper than AGENTD_MAX_JSON_DEPTH and 422 `unstorable-value` when it
holds one of those values, each naming the field. The parsed document is handed on, so FastAPI
does not parse it a second time.

The body must be declared JSON. A body with another Content-Type (`curl -d` sends form
encoding, `text/plain` is common too) is answered 415 `unsupported-media-type` naming
`Content-Type: application/json`, where FastAPI answered 422 "Input should be a valid
dictionary", which read as a schema error and never named the header. 415 because the content
is well-formed but in a format the route does not take (RFC 9110 section 15.5.16): no field of
it was looked at. A body with no Content-Type at all is read as JSON (curl users, scripts), as
if it had said `application/json`: a JSON body works, anything else gets the usual 422
`json_invalid` with its position.

Both checks run on every body, so each starts with a filter on the raw bytes that nearly every
body passes in well under a microsecond: fewer brackets than the depth limit cannot nest deeper
than it, and bytes without an escape, NaN, Infinity or a long run of digits hold no unstorable
value. Only bodies that fail a filter are walked.
"""

import json
import re
from collections.abc import Callable, Coroutine
from email.message import Message
from typing import Any

from fastapi import params
from fastapi.routing import APIRoute
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Receive, Scope

from app.errors import JsonTooDeep, UnsupportedMediaType
from app.settings import Settings
from app.wire import Loc, check_storable, printable_loc, unstorable

#: Escapes that spell an unstorable character: half of a surrogate pair, or NUL.
_SUSPECT_ESCAPE = re.compile(rb"\\u(?:[dD][89a-fA-F]|0000)")
#: Digits as 0, exponent markers as e and signs as +, so number shapes are found with `in`.
_NUMBER_SHAPES = bytes.maketrans(b"123456789E-", b"000000000e+")
#: 19+ digits: an integer beyond 64 bits, or a mantissa that overflows.
_LONG_DIGITS = b"0" * 19

#: What the depth scan reads: whole strings (brackets inside them are text), brackets, commas
#: and colons.
_TOKEN = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{},:]')
_OPEN = frozenset(b"[{")
_CLOSE = frozenset(b"]}")

_Handler = Callable[[Request], Coroutine[Any, Any, Response]]


def _suspect(body: bytes) -> bool:
    """Whether the bytes may hold an unstorable value (a cheap filter, false positives allowed)."""
    if b"\\u" in body and _SUSPECT_ESCAPE.search(body):
        return True
    if b"NaN" in body or b"Infinity" in body:
        return True
    shapes = body.translate(_NUMBER_SHAPES)
    return _LONG_DIGITS in shapes or b"e000" in shapes or b"e+000" in shapes


def _deeper_than(document: Any, max_depth: int) -> bool:
    """Whether arrays and objects nest more than `max_depth` levels in `document`.

    Level by level, so the walk needs no recursion and stops one level past the limit.
    """
    level = [document] if isinstance(document, dict | list) else []
    depth = 0
    while level:
        depth += 1
        if depth > max_depth:
            return True
        level = [
            child
            for node in level
            for child in (node.values() if isinstance(node, dict) else node)
            if isinstance(child, dict | list)
        ]
    return False


def locate_too_deep(body: bytes, max_depth: int) -> Loc:
    """The keys and indexes of the first array or object in `body` that opens `max_depth + 1`
    levels deep, read from the bytes (a document too deep to parse has no other form).

    Reads only up to that point, so its cost is bounded by where the limit is crossed.
    """
    kinds: list[int] = []  # the bracket that opened each container still open
    path: list[str | int] = []  # the member of each open container being read
    last_string = b'""'
    for match in _TOKEN.finditer(body):
        token = match.group()
        first = token[0]
        if first in _OPEN:
            if len(kinds) >= max_depth:
                return tuple(path)
            kinds.append(first)
            path.append(0 if first == ord("[") else "")
        elif first in _CLOSE:
            if kinds:
                kinds.pop()
                path.pop()
        elif first == ord('"'):
            last_string = token
        elif kinds and first == ord(","):
            member = path[-1]
            if isinstance(member, int):
                path[-1] = member + 1
        elif kinds and first == ord(":") and kinds[-1] == ord("{"):
            path[-1] = _key(last_string)
    return tuple(path)


def _key(token: bytes) -> str:
    try:
        key = json.loads(token)
    except ValueError:
        return token[1:-1].decode("utf-8", "replace")
    return key if isinstance(key, str) else str(key)


def too_deep(body: bytes, loc: Loc, max_depth: int) -> JsonTooDeep:
    """The 422 for `body` (found at `loc`) nesting deeper than `max_depth`, naming where."""
    where = printable_loc((*loc, *locate_too_deep(body, max_depth)))
    reason = f"JSON nested deeper than {max_depth} levels (AGENTD_MAX_JSON_DEPTH)."
    return JsonTooDeep(
        f"{'.'.join(map(str, where))}: {reason}",
        errors=[{"type": "json_too_deep", "loc": where, "msg": reason}],
    )


def check_json(body: bytes, document: Any, loc: Loc, max_depth: int) -> None:
    """Raise JsonTooDeep or UnstorableValue (422s naming the field) for `document`, parsed from
    `body` and found at `loc`, if it nests deeper than `max_depth` or cannot be stored."""
    if body.count(b"[") + body.count(b"{") > max_depth and _deeper_than(document, max_depth):
        raise too_deep(body, loc, max_depth)
    if _suspect(body):
        check_storable(document, loc)


def check_depth(document: Any, loc: Loc, max_depth: int) -> None:
    """Raise JsonTooDeep naming where if `document` (already parsed elsewhere, e.g. by the MCP
    SDK) nests deeper than `max_depth`."""
    if _deeper_than(document, max_depth):
        raise too_deep(json.dumps(document).encode(), loc, max_depth)


def parse_json(body: bytes, loc: Loc, max_depth: int) -> Any:
    """`body` parsed and checked by `check_json`; ValueError if it is not JSON.

    Raises UnstorableValue for bytes that are not UTF-8, JsonTooDeep for a document too deep
    for the parser itself.
    """
    try:
        document = json.loads(body)
    except UnicodeDecodeError as exc:
        raise unstorable((*loc, exc.start), "Body is not valid UTF-8.") from exc
    except RecursionError:
        raise too_deep(body, loc, max_depth) from None
    check_json(body, document, loc, max_depth)
    return document


class _ReadRequest(Request):
    """The request with its body already read (FastAPI parses it next, and fails)."""

    def __init__(self, scope: Scope, receive: Receive, body: bytes) -> None:
        super().__init__(scope, receive)
        self._checked_body = body

    async def body(self) -> bytes:
        return self._checked_body


class _ParsedJsonRequest(_ReadRequest):
    """The request with its body already read and parsed (what FastAPI reads next)."""

    def __init__(self, scope: Scope, receive: Receive, body: bytes, document: Any) -> None:
        super().__init__(scope, receive, body)
        self._checked_document = document

    async def json(self) -> Any:
        return self._checked_document


def _is_json(content_type: str) -> bool:
    # The same rule FastAPI applies before it parses a body as JSON.
    message = Message()
    message["content-type"] = content_type
    subtype = message.get_content_subtype()
    return message.get_content_maintype() == "application" and (
        subtype == "json" or subtype.endswith("+json")
    )


def not_json(content_type: str) -> UnsupportedMediaType:
    """The 415 for a body declared as `content_type`, which is not JSON."""
    return UnsupportedMediaType(
        f"The request body must be JSON, sent with the header `Content-Type: application/json` "
        f"(this request said `Content-Type: {content_type}`). With curl, add "
        "-H 'Content-Type: application/json' or send the body with --json.",
        contentType=content_type,
    )


def _declared_json(scope: Scope) -> Scope:
    """`scope` with `Content-Type: application/json` added (for a body that had none)."""
    return {**scope, "headers": [*scope["headers"], (b"content-type", b"application/json")]}


class JsonRoute(APIRoute):
    """An APIRoute whose JSON body is refused when it is declared as something else (415),
    nests too deeply or holds a value storage cannot keep (422)."""

    async def parse_body(self, body: bytes, settings: Settings) -> Any:
        """The checked document of a non-empty JSON body; ValueError if it is not JSON."""
        return parse_json(body, ("body",), settings.max_json_depth)

    def get_route_handler(self) -> _Handler:
        handle = super().get_route_handler()
        body_field = getattr(self, "body_field", None)
        if body_field is None or isinstance(body_field.field_info, params.Form):
            return handle

        async def handler(request: Request) -> Response:
            if request.method not in {"POST", "PUT", "PATCH"}:
                return await handle(request)
            content_type = request.headers.get("content-type")
            body = await request.body()
            if not body:  # no body: FastAPI says which fields are missing
                return await handle(request)
            if content_type and not _is_json(content_type):
                raise not_json(content_type)
            scope = request.scope if content_type else _declared_json(request.scope)
            try:
                document = await self.parse_body(body, request.app.state.settings)
            except ValueError:
                # FastAPI answers its json_invalid 422 (with the position).
                return await handle(_ReadRequest(scope, request.receive, body))
            return await handle(_ParsedJsonRequest(scope, request.receive, body, document))

        return handler
