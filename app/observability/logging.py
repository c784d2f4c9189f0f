"""Logs: JSON lines for machines, plain lines for a person at a terminal, both with the ids.

Owns the log format and the context variables that tie a log line to the request and the
invocation it belongs to. The request id is bound by `app.api.middleware.RequestIdMiddleware`
(from the `X-Request-ID` header), so this module never loads the web framework. A `logging.Filter`
on agentd's handler copies both ids onto every record that reaches it, so lines from uvicorn,
SQLAlchemy and libraries carry them too, with no change to the code that logs.

JSON rendering is python-json-logger's `JsonFormatter`: it already handles `extra=` fields,
exception text and values json cannot encode, which a hand-rolled Formatter would have to redo.
Which format is used is AGENTD_LOG_FORMAT's choice (`log_format`): `json`, `text`, or `auto`
(the default), which writes text when the log stream is a terminal and JSON otherwise, so
`make run` reads well while a container's or a pipe's output stays machine-readable.

An invocation's task is created while its request is being handled, so it inherits the request
id of the request that started it; `bind_invocation` adds the invocation id on top.
"""

import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any, Literal, TextIO

from pythonjsonlogger.core import RESERVED_ATTRS
from pythonjsonlogger.json import JsonFormatter as _LibraryJsonFormatter

#: The id of the HTTP request being handled (None outside a request).
request_id_var: ContextVar[str | None] = ContextVar("agentd_request_id", default=None)
#: The id of the invocation being run (None outside a run).
invocation_id_var: ContextVar[str | None] = ContextVar("agentd_invocation_id", default=None)

#: The header a request id travels in, both ways (`app.api.middleware.RequestIdMiddleware`).
REQUEST_ID_HEADER = "X-Request-ID"

#: The loggers uvicorn configures for itself; `configure_logging` sends them to the root logger
#: (all but its access logger, which agentd's own access line replaces).
UVICORN_LOGGERS = ("uvicorn", "uvicorn.error")

#: AGENTD_LOG_FORMAT's values: `auto` is text on a terminal, JSON otherwise.
LogFormat = Literal["auto", "json", "text"]

_HANDLER_NAME = "agentd"
# Record attributes that are not `extra=` fields: the standard ones (3.12's taskName too), our
# ids, uvicorn's coloured copy of its message.
_NOT_EXTRA = frozenset(
    {*RESERVED_ATTRS, "taskName", "request_id", "invocation_id", "color_message"}
)


class ContextFilter(logging.Filter):
    """Adds `request_id` and `invocation_id` from the context variables to every record."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Annotate `record` (an id passed with `extra=` wins) and let it through."""
        if not hasattr(record, "request_id"):
            record.request_id = request_id_var.get()
        if not hasattr(record, "invocation_id"):
            record.invocation_id = invocation_id_var.get()
        return True


class JsonFormatter(_LibraryJsonFormatter):
    """JSON lines: time, level, logger, message, request_id, invocation_id, extras, exc_info."""

    def __init__(self) -> None:
        super().__init__(
            ["levelname", "name", "message", "request_id", "invocation_id"],
            rename_fields={"levelname": "level", "name": "logger"},
            # uvicorn passes an ANSI-coloured copy of its messages as an extra; drop it.
            reserved_attrs=[*RESERVED_ATTRS, "color_message"],
        )

    def add_fields(
        self, log_data: dict[str, Any], record: logging.LogRecord, message_dict: dict[str, Any]
    ) -> None:
        """Put an ISO 8601 UTC `time` first, then the library's fields."""
        log_data["time"] = datetime.fromtimestamp(record.created, tz=UTC).isoformat(
            timespec="milliseconds"
        )
        super().add_fields(log_data, record, message_dict)


class TextFormatter(logging.Formatter):
    """One plain line for a person: local time, level, logger, message, then the ids and extras
    that are set (`request=... invocation=... key=value`), then any traceback."""

    def __init__(self) -> None:
        super().__init__(
            "%(asctime)s.%(msecs)03d %(levelname)-7s %(name)s: %(message)s", "%H:%M:%S"
        )

    def formatMessage(self, record: logging.LogRecord) -> str:
        """The line, with the context appended before any traceback lines follow."""
        context = {
            "request": getattr(record, "request_id", None),
            "invocation": getattr(record, "invocation_id", None),
        }
        context |= {key: value for key, value in vars(record).items() if key not in _NOT_EXTRA}
        tail = " ".join(f"{key}={value}" for key, value in context.items() if value is not None)
        line = super().formatMessage(record)
        return f"{line}  [{tail}]" if tail else line


def wants_json(log_format: LogFormat, stream: TextIO) -> bool:
    """Whether to write JSON to `stream`: as asked, or under `auto` unless it is a terminal."""
    if log_format != "auto":
        return log_format == "json"
    try:
        return not stream.isatty()
    except (AttributeError, ValueError):  # no isatty, or a closed stream: not a person
        return True


def configure_logging(
    level: str = "INFO",
    json_format: bool | None = None,
    *,
    log_format: LogFormat = "auto",
    stream: TextIO | None = None,
) -> None:
    """Log to `stream` (stderr) through agentd's handler, uvicorn's loggers included.

    The format is `log_format`'s (AGENTD_LOG_FORMAT; `auto`: text when `stream` is a terminal,
    JSON otherwise) unless `json_format` is given, which decides on its own. Replaces only a
    handler an earlier call installed, so it is idempotent and leaves other handlers (pytest's,
    for one) alone.
    """
    target = sys.stderr if stream is None else stream
    if json_format is None:
        json_format = wants_json(log_format, target)
    root = logging.getLogger()
    for handler in list(root.handlers):
        if handler.get_name() == _HANDLER_NAME:
            root.removeHandler(handler)
    handler = logging.StreamHandler(target)
    handler.set_name(_HANDLER_NAME)
    handler.addFilter(ContextFilter())
    handler.setFormatter(JsonFormatter() if json_format else TextFormatter())
    root.addHandler(handler)
    root.setLevel(level.upper())
    for name in UVICORN_LOGGERS:
        # uvicorn's default config gives these their own plain-text handlers and stops
        # propagation; hand them to the root logger so one format and one level apply.
        uvicorn_logger = logging.getLogger(name)
        uvicorn_logger.handlers.clear()
        uvicorn_logger.propagate = True
        uvicorn_logger.setLevel(logging.NOTSET)
    # agentd writes its own access line (`agentd.access`, AGENTD_ACCESS_LOG). uvicorn logs one
    # whenever its logger has a handler, root's included, so it is cut off here: otherwise
    # `--no-access-log` would have no effect and every request would be logged twice.
    uvicorn_access = logging.getLogger("uvicorn.access")
    uvicorn_access.propagate = False
    uvicorn_access.disabled = True


@contextmanager
def bind_invocation(invocation_id: str) -> Iterator[None]:
    """Tag every log line emitted inside the block with `invocation_id`."""
    token = invocation_id_var.set(invocation_id)
    try:
        yield
    finally:
        invocation_id_var.reset(token)
