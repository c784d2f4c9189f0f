"""HTTP-level error handling that the problem+json handler delegates to.

Two things only the HTTP layer knows, applied to every problem the handler renders:

- which methods a path allows: a request whose method the path's own operation does not list is
  405 with `Allow`, even when a catch-all route (`/artifacts/{name:path}`) happened to take it
  and refused the path parameter (a name ending in `/versions` is not a name);
- the documented 422 shape: every 422 carries `errors` (pydantic's `loc` / `msg` / `type`
  list), also the problems agentd raises itself, which name no field (`loc` is empty);
- a bounded answer: at most `MAX_ERRORS` errors, and `moreErrors` counts the ones left out (a
  body with a million bad values would otherwise be answered with all of them).
"""

import re
from typing import Any

from fastapi.exceptions import RequestValidationError
from fastapi.routing import RouteContext, iter_route_contexts
from fastapi_problem.handler import http_exception_handler_, request_validation_handler_
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette_problem.util import convert_status_code

_PARAMETER = re.compile(r"\{[^}]*\}")

#: The most errors one 422 lists; `moreErrors` counts the rest.
MAX_ERRORS = 100


class TruncatedValidationError(RequestValidationError):
    """A RequestValidationError that kept only its first errors; `omitted` counts the others
    (raised by validation that stops collecting at MAX_ERRORS)."""

    def __init__(self, errors: list[Any], omitted: int) -> None:
        super().__init__(errors)
        self.omitted = omitted


def _literal_length(route: RouteContext) -> int:
    # How specific a path template is: the characters that are not path parameters.
    return len(_PARAMETER.sub("", route.path_format or ""))


def allowed_methods(request: Request) -> set[str]:
    """The methods of the most specific path template that matches the request's path.

    `/artifacts/{name}/versions` and the catch-all `/artifacts/{name}` both match
    `/artifacts/a/versions`; the path belongs to the first, so only its methods are allowed.
    """
    # Routes of included routers are reached through FastAPI's route contexts, as its OpenAPI
    # generator reaches them; `app.routes` only lists the routers.
    matching = [
        route
        for route in iter_route_contexts(request.app.routes)
        if (regex := getattr(route, "path_regex", None)) is not None
        and regex.match(request.url.path)
    ]
    if not matching:
        return set()
    specific = max(_literal_length(route) for route in matching)
    return {
        method
        for route in matching
        if _literal_length(route) == specific
        for method in route.methods or ()
    }


def http_exception_with_full_allow(eh: Any, request: Request, exc: HTTPException) -> Any:
    """Starlette's 405 lists only the first route matching the path; list the path's methods."""
    if exc.status_code == 405:
        methods = allowed_methods(request)
        exc.headers = {**(exc.headers or {}), "Allow": ", ".join(sorted(methods))}
    return http_exception_handler_(eh, request, exc)


def capped_request_validation(eh: Any, request: Request, exc: RequestValidationError) -> Any:
    """FastAPI's 422 with at most MAX_ERRORS errors, cut before they are rendered."""
    errors = exc.errors()
    omitted = getattr(exc, "omitted", 0) + max(len(errors) - MAX_ERRORS, 0)
    if omitted:
        exc = TruncatedValidationError(list(errors[:MAX_ERRORS]), omitted)
    problem = request_validation_handler_(eh, request, exc)
    if omitted:
        problem.extras["moreErrors"] = omitted
    return problem


def _capped(content: dict[str, Any]) -> dict[str, Any]:
    errors = content.get("errors")
    if not isinstance(errors, list) or len(errors) <= MAX_ERRORS:
        return content
    more = content.get("moreErrors")
    omitted = (more if isinstance(more, int) else 0) + len(errors) - MAX_ERRORS
    return {**content, "errors": errors[:MAX_ERRORS], "moreErrors": omitted}


def complete_problem(
    content: dict[str, Any], request: Request, response: Response
) -> tuple[dict[str, Any], Response]:
    """Post hook of the problem handler: 405 for unlisted methods, `errors` on every 422, at
    most MAX_ERRORS of them."""
    if response.status_code < 500 and response.status_code != 405:
        methods = allowed_methods(request)
        if methods and request.method not in methods:
            title, type_ = convert_status_code(405)
            content = {
                "type": type_,
                "title": title,
                "status": 405,
                "detail": f"{request.method} is not allowed here.",
            }
            response.status_code = 405
            response.headers["Allow"] = ", ".join(sorted(methods))
            response.body = response.render(content)
            return content, response
    if response.status_code == 422 and not isinstance(content.get("errors"), list):
        error_type = str(content.get("type") or "invalid-request").replace("-", "_")
        message = str(content.get("detail") or content.get("title") or "Invalid request.")
        content = {**content, "errors": [{"loc": [], "msg": message, "type": error_type}]}
        response.body = response.render(content)
    capped = _capped(content)
    if capped is not content:
        content = capped
        response.body = response.render(content)
    return content, response
