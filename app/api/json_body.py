"""JSON request bodies that can be stored as they are, checked before any route runs.

FastAPI parses bodies with Python's json module, which accepts what no UTF-8 JSON column can
hold: lone surrogates (`"\\ud800"`), NaN, Infinity (also a number such as 1e999999 that overflows
to it) and integers of any size. Left alone they reach storage as a 5xx, or as a silent change
(NaN stored as null). `JsonRoute` parses the body once, and when its bytes show one of those
shapes, walks it (`app.wire.find_unstorable`) and answers 422 `unstorable-value` naming the field,
before the endpoint or any write runs. The parsed document is handed on, so FastAPI does not
parse it a second time.
"""

import json
import re
from collections.abc import Callable, Coroutine
from email.message import Message
from typing import Any

from fastapi.routing import APIRoute
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Receive, Scope

from app.wire import check_storable, unstorable

#: Byte shapes that can hide an unstorable value: an escaped surrogate, NaN or Infinity, a run of
#: 19+ digits (an integer beyond 64 bits, or a mantissa that overflows), a 3-digit exponent.
#: Bodies without them (nearly all) are not walked.
_SUSPECT = re.compile(rb"\\u[dD][89a-fA-F]|NaN|Infinity|\d{19}|[eE][+-]?\d{3}")

_Handler = Callable[[Request], Coroutine[Any, Any, Response]]


class _ParsedJsonRequest(Request):
    """The request with its body already read and parsed (what FastAPI reads next)."""

    def __init__(self, scope: Scope, receive: Receive, body: bytes, document: Any) -> None:
        super().__init__(scope, receive)
        self._checked_body = body
        self._checked_document = document

    async def body(self) -> bytes:
        return self._checked_body

    async def json(self) -> Any:
        return self._checked_document


def _is_json(request: Request) -> bool:
    # The same rule FastAPI applies before it parses a body as JSON.
    content_type = request.headers.get("content-type")
    if not content_type:
        return True
    message = Message()
    message["content-type"] = content_type
    subtype = message.get_content_subtype()
    return message.get_content_maintype() == "application" and (
        subtype == "json" or subtype.endswith("+json")
    )


class JsonRoute(APIRoute):
    """An APIRoute whose JSON body is refused (422) when it holds a value storage cannot keep."""

    def get_route_handler(self) -> _Handler:
        handle = super().get_route_handler()
        if getattr(self, "body_field", None) is None:
            return handle

        async def handler(request: Request) -> Response:
            if request.method in {"POST", "PUT", "PATCH"} and _is_json(request):
                body = await request.body()
                if body:
                    try:
                        document = json.loads(body)
                    except UnicodeDecodeError as exc:
                        reason = "Body is not valid UTF-8."
                        raise unstorable(("body", exc.start), reason) from exc
                    except ValueError:
                        return await handle(request)  # FastAPI answers its json_invalid 422
                    if _SUSPECT.search(body):
                        check_storable(document, ("body",))
                    request = _ParsedJsonRequest(request.scope, request.receive, body, document)
            return await handle(request)

        return handler
