"""Logs and request ids: X-Request-ID in and out, ids on every log line, JSON or text lines
(text on a terminal: a real pseudo-terminal from `pty`), optional tracing."""

import io
import json
import logging
import os
import pty
import select
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TextIO

import pydantic
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
    wants_json,
)
from app.observability.tracing import ENDPOINT_VARIABLE, fastapi_telemetry, setup_tracing
from app.settings import Settings

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


@contextmanager
def restored_logging() -> Iterator[None]:
    """The logging setup found on entry, restored on the way out."""
    root = logging.getLogger()
    saved_root = (list(root.handlers), root.level)
    saved_uvicorn = [
        (lg, list(lg.handlers), lg.propagate, lg.level, lg.disabled)
        for lg in map(logging.getLogger, (*UVICORN_LOGGERS, "uvicorn.access"))
    ]
    try:
        yield
    finally:
        root.handlers[:] = saved_root[0]
        root.setLevel(saved_root[1])
        for lg, handlers, propagate, level, disabled in saved_uvicorn:
            lg.handlers[:] = handlers
            lg.propagate = propagate
            lg.setLevel(level)
            lg.disabled = disabled


@pytest.fixture
def saved_logging() -> Iterator[None]:
    """The test may configure logging: what it found is restored after it."""
    with restored_logging():
        yield


@pytest.fixture
def log_stream() -> Iterator[io.StringIO]:
    """Logging into a buffer, which is not a terminal: JSON lines by default."""
    with restored_logging():
        stream = io.StringIO()
        configure_logging("INFO", stream=stream)
        yield stream


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


# --- the format: text on a terminal, JSON elsewhere ------------------------------------------

READ_SECONDS = 30


@pytest.fixture
def terminal() -> Iterator[tuple[TextIO, int]]:
    """A pseudo-terminal: (its slave end as a text stream, its master end's fd to read)."""
    master, slave = pty.openpty()
    stream = os.fdopen(slave, "w", buffering=1)
    try:
        yield stream, master
    finally:
        stream.close()
        os.close(master)


def read_terminal(master: int, until: str) -> list[str]:
    """The lines written to the terminal until one holds `until` (fails after READ_SECONDS)."""
    received = b""
    deadline = time.monotonic() + READ_SECONDS
    while until.encode() not in received:
        remaining = deadline - time.monotonic()
        assert remaining > 0, f"{until!r} never reached the terminal: {received!r}"
        ready, _, _ = select.select([master], [], [], remaining)
        if ready:
            received += os.read(master, 65536)
    # The terminal's line discipline writes each newline as CRLF.
    return received.decode().replace("\r\n", "\n").splitlines()


def test_auto_means_text_on_a_terminal_and_json_anywhere_else(
    terminal: tuple[TextIO, int],
) -> None:
    stream, _ = terminal
    assert stream.isatty()
    assert wants_json("auto", stream) is False
    assert wants_json("auto", io.StringIO()) is True


def test_json_and_text_are_obeyed_whatever_the_stream(terminal: tuple[TextIO, int]) -> None:
    stream, _ = terminal
    assert wants_json("json", stream) is True
    assert wants_json("text", io.StringIO()) is False


def test_a_closed_stream_counts_as_no_terminal() -> None:
    closed = io.StringIO()
    closed.close()
    assert wants_json("auto", closed) is True


@pytest.mark.usefixtures("saved_logging")
def test_a_terminal_gets_plain_lines_with_the_ids_the_extras_and_the_traceback(
    terminal: tuple[TextIO, int],
) -> None:
    stream, master = terminal
    configure_logging("INFO", stream=stream)

    log.info("no context")
    request_id_var.set("req-9")
    try:
        with bind_invocation("inv-7"):
            try:
                raise ValueError("boom")
            except ValueError:
                log.warning("slow step", exc_info=True, extra={"seconds": 1.5})
    finally:
        request_id_var.set(None)

    first, second, *traceback = read_terminal(master, "ValueError: boom")
    assert first.endswith(" INFO    tests.observability: no context")
    assert " WARNING tests.observability: slow step  [" in second
    assert second.endswith("[request=req-9 invocation=inv-7 seconds=1.5]")
    assert not second.startswith("{")
    assert traceback[0] == "Traceback (most recent call last):"
    assert traceback[-1] == "ValueError: boom"


@pytest.mark.usefixtures("saved_logging")
def test_text_drops_uvicorns_coloured_copy_of_its_message() -> None:
    stream = io.StringIO()
    configure_logging("INFO", log_format="text", stream=stream)

    logging.getLogger("uvicorn.error").info(
        "server started", extra={"color_message": "\x1b[1mserver started\x1b[0m"}
    )

    (line,) = stream.getvalue().splitlines()
    assert line.endswith(" INFO    uvicorn.error: server started")


APP_LOGS = """
import logging, app.main
app.main.app  # builds the app as uvicorn does, which configures logging
logging.getLogger("agentd.test").warning("hello", extra={"seconds": 2})
"""


def app_logs(tmp_path: Path, stderr: int, log_format: str | None) -> subprocess.Popen[bytes]:
    """A process that builds agentd's app (as `uvicorn app.main:app` does) and logs a line."""
    env = {name: value for name, value in os.environ.items() if not name.startswith("AGENTD_")}
    env |= {
        "AGENTD_DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'x.db'}",
        "AGENTD_DATA_DIR": str(tmp_path / "data"),
        "AGENTD_AGENTS_DIR": str(tmp_path / "agents"),
    }
    if log_format is not None:
        env["AGENTD_LOG_FORMAT"] = log_format
    # cwd: no `.env` of the checkout's may choose for the test.
    return subprocess.Popen([sys.executable, "-c", APP_LOGS], cwd=tmp_path, env=env, stderr=stderr)


def hello_on_terminal(tmp_path: Path, terminal: tuple[TextIO, int], log_format: str | None) -> str:
    """The app's "hello" line as a terminal shows it."""
    stream, master = terminal
    process = app_logs(tmp_path, stream.fileno(), log_format)
    lines = read_terminal(master, "hello")
    assert process.wait(timeout=READ_SECONDS) == 0, "\n".join(lines)
    (line,) = [line for line in lines if "hello" in line]
    return line


def test_the_app_logs_text_to_a_terminal(tmp_path: Path, terminal: tuple[TextIO, int]) -> None:
    line = hello_on_terminal(tmp_path, terminal, None)
    assert line.endswith(" WARNING agentd.test: hello  [seconds=2]")


def test_the_app_logs_json_to_a_terminal_when_told(
    tmp_path: Path, terminal: tuple[TextIO, int]
) -> None:
    line = hello_on_terminal(tmp_path, terminal, "json")
    assert json.loads(line)["seconds"] == 2


def test_the_app_logs_json_into_a_pipe(tmp_path: Path) -> None:
    process = app_logs(tmp_path, subprocess.PIPE, None)
    _, err = process.communicate(timeout=READ_SECONDS)
    assert process.returncode == 0, err.decode()
    records = [json.loads(line) for line in err.decode().splitlines()]
    assert any(record["message"] == "hello" and record["seconds"] == 2 for record in records)


def test_the_log_format_setting_takes_auto_json_or_text(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AGENTD_LOG_FORMAT", raising=False)
    assert Settings(_env_file=None).log_format == "auto"
    monkeypatch.setenv("AGENTD_LOG_FORMAT", "text")
    assert Settings(_env_file=None).log_format == "text"
    monkeypatch.setenv("AGENTD_LOG_FORMAT", "yaml")
    with pytest.raises(pydantic.ValidationError, match="log_format"):
        Settings(_env_file=None)
