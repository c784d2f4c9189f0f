"""HTTP-level error handling that the problem+json handler delegates to."""

from typing import Any

from fastapi_problem.handler import http_exception_handler_
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.routing import Route


def http_exception_with_full_allow(eh: Any, request: Request, exc: HTTPException) -> Any:
    """Starlette's 405 lists only the first route matching the path; list every route's methods."""
    if exc.status_code == 405:
        methods = {
            method
            for route in request.app.routes
            if isinstance(route, Route) and route.path_regex.match(request.url.path)
            for method in route.methods or ()
        }
        exc.headers = {**(exc.headers or {}), "Allow": ", ".join(sorted(methods))}
    return http_exception_handler_(eh, request, exc)
