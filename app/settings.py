"""Process-wide configuration, read once from `AGENTD_*` environment variables (or a `.env` file).

pydantic-settings does the parsing so that every knob is typed, documented in one place and
validated at start-up rather than at first use.
"""

import os
from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    """All settings of one agentd process."""

    model_config = SettingsConfigDict(env_prefix="AGENTD_", env_file=".env", extra="ignore")

    database_url: str = Field(
        default="",
        description="SQLAlchemy async URL (`postgresql+asyncpg://user:pw@host/db` for "
        "PostgreSQL); empty means the SQLite file `<data dir>/agentd.db`.",
    )
    data_dir: Path = Field(default=Path("data"), description="Local state: SQLite file, blobs.")
    agents_dir: Path = Field(default=Path("agents"), description="One sub-folder per app.")
    db_pool_size: int = Field(
        default=10,
        ge=1,
        le=200,
        description="Database connections per process (PostgreSQL; a worker opens one more for "
        "LISTEN).",
    )
    db_echo: bool = Field(
        default=False,
        description="Log every SQL statement (SQLAlchemy echo); with SQLite, only when "
        "AGENTD_SQLITE_FAST_PATH=false.",
    )
    sqlite_fast_path: bool = Field(
        default=True,
        description=(
            "SQLite only: run statements inline on the event loop through the compiled-statement "
            "executor (app.db.sqlite). false = SQLAlchemy's stock aiosqlite path (SQL echo and "
            "tracing see every statement)."
        ),
    )

    max_request_bytes: int = Field(
        default=8 * 1024 * 1024,
        ge=1024,
        description="Largest request body accepted, raw artifact uploads aside (413 above).",
    )
    max_artifact_bytes: int = Field(
        default=64 * 1024 * 1024, ge=1, description="Largest artifact version (413 above)."
    )
    max_json_depth: int = Field(
        default=64,
        ge=2,
        le=128,
        description="Deepest nesting of arrays and objects accepted in a JSON body, header or "
        "MCP call (422 json-too-deep above). At most 128: deeper documents would reach the "
        "serializer's and the interpreter's recursion limits.",
    )
    max_import_events: int = Field(
        default=10_000,
        ge=1,
        description="Most events one session import (a create with `events`) may hold; counted "
        "while parsing, 413 import-too-large above. The default matches "
        "AGENTD_MAX_SESSION_EVENTS, so a session a GET exports can be imported back.",
    )
    max_import_bytes: int | None = Field(
        default=None,
        ge=1024,
        description="Largest body of POST .../sessions (a create, with or without events to "
        "import), in place of AGENTD_MAX_REQUEST_BYTES for that route (413 above); unset: "
        "AGENTD_MAX_REQUEST_BYTES.",
    )

    blob_store: Literal["local", "s3", "memory"] = Field(
        default="local", description="Where artifact bytes live."
    )
    blob_dir: Path | None = Field(
        default=None,
        description="Local blob folder (unset: `<data dir>/blobs`); with PostgreSQL and more "
        "than one replica, one folder they all share (startup warns), else use S3.",
    )
    s3_bucket: str = Field(default="", description="S3: the bucket (AGENTD_BLOB_STORE=s3).")
    s3_prefix: str = Field(default="", description="S3: a key prefix for every blob.")
    s3_endpoint_url: str | None = Field(
        default=None, description="S3: the endpoint of an S3-compatible store (MinIO, ...)."
    )
    s3_region: str | None = Field(default=None, description="S3: the region.")
    s3_force_path_style: bool = Field(
        default=False, description="S3: path-style URLs (bucket in the path; MinIO)."
    )
    s3_connect_timeout_seconds: float = Field(
        default=3, gt=0, description="S3: how long to wait for a connection before giving up."
    )
    s3_read_timeout_seconds: float = Field(
        default=10,
        gt=0,
        description="S3: how long to wait for each read of an answer before giving up.",
    )
    s3_max_attempts: int = Field(
        default=2,
        ge=1,
        description="S3: tries per request, the first included, before answering 503 "
        "(/readyz tries once).",
    )
    max_invocation_seconds: float = Field(
        default=600, gt=0, description="An invocation running longer fails (invocation-timeout)."
    )
    action_timeout_seconds: float | None = Field(
        default=None,
        gt=0,
        description="How long an invocation may wait in requires_action (unset: forever).",
    )
    action_timeout_policy: Literal["fail", "continue"] = Field(
        default="fail",
        description="On that timeout: fail the invocation (action-expired), or continue it with "
        "every pending call answered by an error (confirmations as denials).",
    )
    max_llm_calls: int = Field(
        default=500, ge=1, description="Cap on model calls per invocation (runConfig may lower it)."
    )
    lease_seconds: float = Field(
        default=30,
        gt=0,
        description="A run's session lease lasts this long unless renewed; after it, a dead "
        "replica's run is taken over by another process (AGENTD_MAX_ATTEMPTS).",
    )
    max_attempts: int = Field(
        default=3,
        ge=1,
        description="How many processes may run one invocation: when its owner dies (its lease "
        "expires) another takes it over from its last committed event, until this many "
        "attempts; then it fails (invocation-interrupted).",
    )
    run_invocations: bool = Field(
        default=True,
        description="Whether this process runs invocations. False: an API-only replica; it "
        "queues them for `agentd worker` processes (or replicas with it true).",
    )
    worker_concurrency: int = Field(
        default=32,
        ge=1,
        description="How many invocations this process takes over from the queue at once "
        "(runs it accepts itself are not capped by it).",
    )
    worker_metrics_port: int | None = Field(
        default=None,
        ge=1,
        le=65535,
        description="`agentd worker` only: serve Prometheus metrics (/metrics, no "
        "authentication) on this port; unset: none.",
    )
    worker_metrics_host: str = Field(
        default="127.0.0.1",
        description="The address the worker's metrics listen on (0.0.0.0 in a container).",
    )
    shutdown_grace_seconds: float = Field(
        default=20,
        ge=0,
        description="On SIGTERM: how long running invocations may go on before they are "
        "handed back to the queue, to resume in another process.",
    )
    enqueue_timeout_seconds: float = Field(
        default=60, ge=0, description="How long `enqueue` waits for the session to be free."
    )
    enqueue_poll_seconds: float = Field(
        default=2.0,
        gt=0,
        description="How often a queued run tries its busy session again when nothing woke "
        "it: a fallback, since an invocation's end in any process notifies the others "
        "(PostgreSQL's NOTIFY, datagrams between the processes on one SQLite file).",
    )
    sse_heartbeat_seconds: float = Field(
        default=15, gt=0, description="Comment frames this often keep idle event streams alive."
    )
    log_format: Literal["auto", "json", "text"] = Field(
        default="auto",
        description="Log lines as JSON (`json`), as plain text (`text`), or `auto`: text when "
        "the log stream (stderr) is a terminal, JSON otherwise (containers, pipes, files).",
    )
    workers: int = Field(
        default=0,
        ge=0,
        description="Server processes `agentd serve` starts on its port (`--workers`); 0: one "
        "per core this process may use. They share the database, hear each other's "
        "notifications and sum their metrics; 1 is a single process.",
    )
    loop: Literal["auto", "asyncio", "uvloop"] = Field(
        default="auto",
        description="The event loop `agentd serve` runs on: uvloop when installed (`auto`), "
        "or asyncio's own (README, Performance: how each behaves under overload).",
    )
    max_inflight_invocations: int = Field(
        default=0,
        ge=0,
        description="Invocations this process runs at once (queued ones waiting for their "
        "session included); past it a new one is refused with 503 `overloaded` and "
        "`Retry-After` before anything is stored. 0: from the machine (512, fewer when memory "
        "is under 4 GiB).",
    )
    access_log: bool = Field(
        default=True,
        description="One `agentd.access` line per answered request (method, path, route, "
        "status, duration, client) at INFO; `false` (or `agentd serve --no-access-log`) writes "
        "none.",
    )
    replica_id: str = Field(
        default="", description="This process's name in leases (default: host:pid)."
    )
    failpoints: str = Field(
        default="",
        description="Testing only: faults to inject at named points (`app/db/failpoints.py`), "
        "e.g. `commit-reply-lost:create*1`.",
    )

    auth: Literal["none", "api_key", "jwt"] = Field(
        default="none",
        description="How callers authenticate; `none` is refused unless bound to loopback.",
    )
    docs_auth: Literal["open", "required"] = Field(
        default="open",
        description="Whether /docs, /redoc and /openapi.json need credentials when AGENTD_AUTH "
        "is on: `open` (anyone may read the API's description) or `required` (a key or token, "
        "as on every route).",
    )
    dev_ui_dir: Path | None = Field(
        default=None,
        description="Folder of ADK's dev web UI served at /dev-ui/ (its `index.html` and "
        "assets); unset: the bundle of an installed google-adk (`agentd[adk-web]`).",
    )
    trace_spans: bool = Field(
        default=True,
        description="Record each invocation's spans in memory (bounded) for the dev UI's Trace "
        "pane and the console's trace view; false saves their cost on every run.",
    )
    jwt_secret: str = Field(default="", description="HS256 secret for AGENTD_AUTH=jwt.")
    jwt_public_key: str = Field(default="", description="RS256 public key (PEM text or a path).")
    jwt_jwks_file: Path | None = Field(default=None, description="RS256 keys as a JWKS file.")
    jwt_audience: str | None = Field(default=None, description="JWT: the required `aud`.")
    jwt_issuer: str | None = Field(default=None, description="JWT: the required `iss`.")
    rate_limit_per_minute: int = Field(
        default=600,
        ge=0,
        description="Requests per principal per minute, per server process (0 = unlimited); not "
        "applied with AGENTD_AUTH=none (429 rate-limited above).",
    )
    cors_origins: list[str] = Field(
        default_factory=list, description="Allowed CORS origins, as a JSON list."
    )
    cors_origin_regex: str | None = Field(
        default=None, description="Allowed CORS origins, as a regular expression."
    )
    max_state_bytes: int = Field(
        default=1024 * 1024, ge=1, description="Largest session state, as JSON (413 above)."
    )
    max_event_bytes: int = Field(
        default=2 * 1024 * 1024, ge=1, description="Largest stored event, as JSON (413 above)."
    )
    gc_grace_seconds: int = Field(
        default=3600, ge=0, description="`agentd gc` spares unreferenced blobs younger than this."
    )
    max_page_size: int = Field(default=1000, ge=1, description="Cap on any list's pageSize.")
    default_page_size: int = Field(
        default=100, ge=1, description="pageSize of a list when the request gives none."
    )
    max_session_events: int = Field(
        default=10_000,
        ge=1,
        description="GET session returns at most this many (most recent) events.",
    )
    history_cache_events: int = Field(
        default=20_000,
        ge=0,
        description="Events kept in memory across turns as their stored JSON (LRU by "
        "session, ~0.5 KB each); 0 disables the cache.",
    )
    history_hot_sessions: int = Field(
        default=32,
        ge=1,
        description="Most recently used sessions whose cached events are also kept parsed "
        "(~5 KB an event), so their next turn parses only new events.",
    )

    allow_local_code_execution: bool = Field(
        default=False,
        description="Let agents run model-written Python on this host (UnsafeLocalCodeExecutor).",
    )
    code_execution_timeout_seconds: float = Field(
        default=30.0, gt=0, description="Wall-clock limit of one local code execution."
    )

    @field_validator("jwt_secret")
    @classmethod
    def _refuse_weak_secret(cls, value: str) -> str:
        if value and len(value) < 32:
            raise ValueError("AGENTD_JWT_SECRET must be at least 32 characters.")
        return value

    @field_validator("default_page_size")
    @classmethod
    def _page_size_positive(cls, value: int) -> int:
        return max(1, value)

    @property
    def resolved_blob_dir(self) -> Path:
        """The local blob folder, defaulting to `<data_dir>/blobs`."""
        return self.blob_dir or self.data_dir / "blobs"

    @property
    def resolved_workers(self) -> int:
        """The server processes to start: as set, else the cores this process may run on."""
        if self.workers:
            return self.workers
        try:
            return len(os.sched_getaffinity(0))
        except AttributeError:  # not on Linux
            return os.cpu_count() or 1

    @property
    def resolved_max_inflight_invocations(self) -> int:
        """The in-flight bound: as set, else 512 (this 2-core machine's process keeps a 2 s
        stream's latency up to ~250-500 at once), else 1 per 8 MiB of memory when that is less."""
        if self.max_inflight_invocations:
            return self.max_inflight_invocations
        return max(16, min(512, _memory_mib() // 8))

    @property
    def resolved_database_url(self) -> str:
        """The database URL to use, defaulting to `<data_dir>/agentd.db`."""
        if self.database_url:
            return self.database_url
        return f"sqlite+aiosqlite:///{(self.data_dir / 'agentd.db').resolve()}"


def _memory_mib() -> int:
    """The machine's memory in MiB (a large figure where the OS does not say)."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // (1024 * 1024)
    except (ValueError, OSError, AttributeError):
        return 1 << 20


@lru_cache
def get_settings() -> Settings:
    """The settings of this process, read once."""
    return Settings()
