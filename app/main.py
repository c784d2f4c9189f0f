"""The ASGI application: `create_app(settings)` and the module-level `app` uvicorn serves.

Engines and services are built in the lifespan (not at import), so importing this module is cheap
and every test can build an app against its own database. The schema is owned by Alembic: the app
never creates tables; `agentd migrate` (which `make run` calls) does.
"""

import gc
import logging
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import Depends, FastAPI
from fastapi.middleware.cors import CORSMiddleware
from fastapi.routing import APIRoute
from fastapi_problem.handler import add_exception_handler, new_exception_handler

from app import __version__
from app.api import (
    apps,
    artifacts,
    console,
    dev_graph,
    dev_trace,
    dev_ui,
    docs,
    health,
    invocations,
    memory,
    metrics,
    runs,
    sessions,
)
from app.api.deps import authenticate
from app.api.errors import (
    capped_request_validation,
    complete_problem,
    http_exception_with_full_allow,
)
from app.api.mcp_route import LazyMcpRoute
from app.api.middleware import BodySizeLimitMiddleware, MetricsMiddleware, RequestIdMiddleware
from app.api.openapi import document_problems
from app.errors import InternalError, Overloaded
from app.invocations.registry import AppRegistry
from app.observability import (
    Metrics,
    configure_logging,
    fastapi_telemetry,
    process_exited,
    set_current,
    setup_tracing,
)
from app.runtime import running
from app.security.api_keys import ApiKeyService
from app.security.authenticator import Authenticator
from app.settings import Settings, get_settings

logger = logging.getLogger("agentd")


def _operation_id(route: APIRoute) -> str:
    # Every route's operationId is its endpoint function's name: stable for generated SDKs, and
    # stated once (the function name) instead of again in each decorator.
    return route.name


def create_app(settings: Settings | None = None) -> FastAPI:
    """Build the FastAPI app for `settings` (default: from the environment)."""
    settings = settings or get_settings()
    mcp = LazyMcpRoute()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        previous_metrics = set_current(app.state.metrics)
        try:
            async with running(settings, app.state.registry) as services:
                app.state.db_engine = services.db_engine
                app.state.session_service = services.session_service
                app.state.artifact_service = services.artifact_service
                app.state.memory_service = services.memory_service
                app.state.invocation_manager = services.invocation_manager
                app.state.authenticator = Authenticator(
                    settings,
                    ApiKeyService(services.db_engine) if settings.auth == "api_key" else None,
                )
                if settings.auth == "none":
                    logger.warning(
                        "AGENTD_AUTH=none: every request acts as an admin. Use it only on loopback."
                    )
                # What is alive now (imported modules, this app, its services) lives as long
                # as the server. Frozen, the cyclic GC stops rescanning it on every full
                # collection, a pause that every request in flight would wait out (README,
                # Performance).
                gc.freeze()
                try:
                    async with mcp.serving():
                        yield
                finally:
                    gc.unfreeze()
        finally:
            set_current(previous_metrics)
            process_exited(os.getpid())  # a worker of several: its live gauges go

    app = FastAPI(
        title="agentd",
        version=__version__,
        summary="Hosts LLM agents and keeps their sessions, invocations and artifacts.",
        lifespan=lifespan,
        generate_unique_id_function=_operation_id,
        telemetry=fastapi_telemetry(),  # type: ignore[arg-type]
        # app.api.docs serves these, with local assets and AGENTD_DOCS_AUTH.
        openapi_url=None,
        docs_url=None,
        redoc_url=None,
    )
    app.openapi = document_problems(app.openapi)  # type: ignore[method-assign]
    app.state.settings = settings
    app.state.registry = AppRegistry(settings.agents_dir)
    app.state.metrics = Metrics()
    # Unexpected errors become a generic 500 problem; their text (maybe internals) is only logged.
    unhandled: dict[str, Any] = {"default": InternalError}
    # The handler logs every 5xx with its traceback; an overload refusal is expected, counted
    # (agentd_invocations_refused_total) and must stay cheap when thousands arrive a second
    # (formatting a traceback was most of a refusal's cost).
    logger.addFilter(_not_overload)
    add_exception_handler(
        app,
        new_exception_handler(
            logger=logger,
            unhandled_wrappers=unhandled,
            http_exception_handler=http_exception_with_full_allow,
            request_validation_handler=capped_request_validation,
            post_hooks=[complete_problem],
        ),
        generic_swagger_defaults=True,
    )
    app.add_middleware(
        BodySizeLimitMiddleware,
        max_bytes=settings.max_request_bytes,
        max_upload_bytes=settings.max_artifact_bytes,
        max_import_bytes=settings.max_import_bytes or settings.max_request_bytes,
    )
    app.add_middleware(MetricsMiddleware, metrics=app.state.metrics, access_log=settings.access_log)
    app.add_middleware(RequestIdMiddleware)
    if settings.cors_origins or settings.cors_origin_regex:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=settings.cors_origins,
            allow_origin_regex=settings.cors_origin_regex,
            allow_methods=["*"],
            allow_headers=["*"],
            expose_headers=["ETag", "Location", "X-Next-Page-Token", "X-Invocation-Id"],
        )
    app.include_router(health.router)
    authenticated = [Depends(authenticate)]
    docs.mount_assets(app)
    app.include_router(docs.open_router)
    docs_auth = authenticated if settings.docs_auth == "required" else None
    app.include_router(docs.router, dependencies=docs_auth)
    # Routes are matched in order, one by one: the per-turn ones (/run, /run_sse) go first.
    for module in (runs, apps, sessions, artifacts, invocations, memory, metrics):
        app.include_router(module.router, dependencies=authenticated)
    # ADK's dev web UI: its files open, the routes it calls authenticated (app.api.dev_ui).
    app.include_router(dev_ui.files_router)
    # agentd's console: its files open, the data it shows from the authenticated API.
    app.include_router(console.files_router)
    app.include_router(dev_ui.router, dependencies=authenticated)
    app.include_router(dev_graph.router, dependencies=authenticated)
    app.include_router(dev_trace.router, dependencies=authenticated)
    mcp.add_to(app)
    setup_tracing(app)
    return app


def _not_overload(record: logging.LogRecord) -> bool:
    """Whether to log `record`: not the problem handler's line for a 503 `overloaded`."""
    return not (record.exc_info and isinstance(record.exc_info[1], Overloaded))


def __getattr__(name: str) -> FastAPI:
    # `uvicorn app.main:app` resolves `app` lazily, so importing app.main never reads settings.
    if name == "app":
        configure_logging(
            os.environ.get("AGENTD_LOG_LEVEL", "INFO"), log_format=get_settings().log_format
        )
        application = create_app()
        globals()["app"] = application
        return application
    raise AttributeError(name)
