"""JSON logs and request ids: X-Request-ID in and out, ids on every log line, optional tracing."""

import io
import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from fastapi.testclient import TestClient

from app.api.middleware import RequestIdMiddleware
from app.observability.logging import (
    REQUEST_ID_HEADER,
    UVICORN_LOGGERS,
    bind_invocation,
    configure_logging,
    invocation_id_var,
    request_id_var,
)
from app.observability.tracing import ENDPOINT_VARIABLE, fastapi_telemetry, setup_tracing

log = logging.getLogger("tests.observability")


def build_app() -> FastAPI:
    """A throwaway app whose routes log inside a request and inside a bound invocation."""
    app = FastAPI()

    @app.get("/id")
    async def current_id() -> dict[str, str | None]:
        return {"request_id": request_id_var.get()}

    @app.get("/run")
    async def run() -> dict[str, str]:
        log.info("request handled")
        with bind_invocation("inv-1"):
            log.info("invocation step")
        return {}

    @app.get("/boom")
    async def boom() -> None:
        raise RuntimeError("unexpected")

    async def server_error(_request: Request, exc: Exception) -> JSONResponse:
        log.error("unhandled error", exc_info=exc)
        return JSONResponse({"detail": "internal"}, status_code=500)

    app.add_exception_handler(Exception, server_error)
    app.add_middleware(RequestIdMiddleware)
    return app


@pytest.fixture
def client() -> Iterator[TestClient]:
    with TestClient(build_app(), raise_server_exceptions=False) as test_client:
        yield test_client


@pytest.fixture
def log_stream() -> Iterator[io.StringIO]:
    """JSON logging into a buffer; the logging setup it found is restored afterwards."""
    root = logging.getLogger()
    saved_root = (list(root.handlers), root.level)
    saved_uvicorn = [
        (lg, list(lg.handlers), lg.propagate, lg.level)
        for lg in map(logging.getLogger, UVICORN_LOGGERS)
    ]
    stream = io.StringIO()
    configure_logging("INFO", stream=stream)
    try:
        yield stream
    finally:
        root.handlers[:] = saved_root[0]
        root.setLevel(saved_root[1])
        for lg, handlers, propagate, level in saved_uvicorn:
            lg.handlers[:] = handlers
            lg.propagate = propagate
            lg.setLevel(level)


def lines(stream: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def test_a_valid_request_id_from_the_client_is_kept_and_echoed(client: TestClient) -> None:
    response = client.get("/id", headers={REQUEST_ID_HEADER: "abc-123.X_y"})

    assert response.headers[REQUEST_ID_HEADER] == "abc-123.X_y"
    assert response.json() == {"request_id": "abc-123.X_y"}


def test_a_request_id_is_generated_when_none_is_given(client: TestClient) -> None:
    first = client.get("/id")
    second = client.get("/id")

    generated = first.headers[REQUEST_ID_HEADER]
    assert len(generated) == 32
    int(generated, 16)  # a uuid4 hex
    assert first.json() == {"request_id": generated}
    assert second.headers[REQUEST_ID_HEADER] != generated


@pytest.mark.parametrize("unsafe", ["x" * 129, "has space", "semi;colon", "new\\nline", ""])
def test_an_unsafe_request_id_is_replaced(client: TestClient, unsafe: str) -> None:
    response = client.get("/id", headers={REQUEST_ID_HEADER: unsafe})

    replaced = response.headers[REQUEST_ID_HEADER]
    assert replaced != unsafe
    assert len(replaced) == 32


def test_the_request_id_does_not_leak_out_of_the_request(client: TestClient) -> None:
    client.get("/id", headers={REQUEST_ID_HEADER: "req-1"})

    assert request_id_var.get() is None


def test_json_log_lines_carry_the_request_id_and_invocation_id(
    client: TestClient, log_stream: io.StringIO
) -> None:
    client.get("/run", headers={REQUEST_ID_HEADER: "req-42"})

    records = {line["message"]: line for line in lines(log_stream)}
    handled = records["request handled"]
    assert handled["request_id"] == "req-42"
    assert handled["invocation_id"] is None
    assert handled["level"] == "INFO"
    assert handled["logger"] == "tests.observability"
    assert handled["time"].endswith("+00:00")
    step = records["invocation step"]
    assert step["request_id"] == "req-42"
    assert step["invocation_id"] == "inv-1"
    assert invocation_id_var.get() is None


def test_the_server_error_log_line_has_the_request_id_and_traceback(
    client: TestClient, log_stream: io.StringIO
) -> None:
    assert client.get("/boom", headers={REQUEST_ID_HEADER: "req-500"}).status_code == 500

    (error,) = [line for line in lines(log_stream) if line["message"] == "unhandled error"]
    assert error["request_id"] == "req-500"
    assert error["level"] == "ERROR"
    assert "RuntimeError: unexpected" in error["exc_info"]


def test_extra_fields_are_kept_in_the_json_line(log_stream: io.StringIO) -> None:
    log.warning("slow step", extra={"seconds": 1.5})

    (line,) = lines(log_stream)
    assert line["seconds"] == 1.5
    assert line["request_id"] is None


def test_configure_logging_routes_uvicorn_through_one_handler(log_stream: io.StringIO) -> None:
    configure_logging("INFO", stream=log_stream)  # a second call replaces the first handler

    logging.getLogger("uvicorn.error").info(
        "server started", extra={"color_message": "\x1b[1mserver started\x1b[0m"}
    )

    (line,) = lines(log_stream)
    assert line["logger"] == "uvicorn.error"
    assert line["message"] == "server started"
    assert "color_message" not in line


def test_tracing_is_a_no_op_without_an_endpoint(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.delenv(ENDPOINT_VARIABLE, raising=False)
    app = FastAPI()

    with caplog.at_level(logging.INFO, logger="agentd.tracing"):
        setup_tracing(app)

    assert [r.message for r in caplog.records] == [f"tracing off: {ENDPOINT_VARIABLE} is not set"]


def test_fastapi_telemetry_is_off_without_an_endpoint_and_default_with_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(ENDPOINT_VARIABLE, raising=False)
    off = fastapi_telemetry()
    assert off == {"tracing": False, "metrics": False, "logs": False, "operation_spans": False}
    # FastAPI skips its per-request provider checks when every signal is off.
    assert not FastAPI(telemetry=off)._native_telemetry.enabled()  # type: ignore[arg-type]

    monkeypatch.setenv(ENDPOINT_VARIABLE, "http://127.0.0.1:4318")
    assert fastapi_telemetry() == {}
