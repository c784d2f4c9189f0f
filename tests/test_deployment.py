"""The container deployment: Dockerfile, docker/entrypoint.sh, docker-compose.yml, .dockerignore,
.env.example.

No Docker engine is needed: the compose file is validated against the Compose Specification's
JSON schema (vendored in tests/data, see its README) plus the wiring agentd relies on; the
Dockerfile is parsed; and the entrypoint script is run for real against a throwaway SQLite
database, on 127.0.0.1, until the server it starts answers /health.
"""

import fnmatch
import json
import os
import re
import shlex
import signal
import socket
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import pydantic
import pytest
import yaml
from alembic.config import Config
from alembic.script import ScriptDirectory
from sqlalchemy.engine import make_url

from app.models.gemini import BASE_URL_ENV as GEMINI_BASE_URL_ENV
from app.settings import Settings
from tests.script_process import stop, wait_healthy
from tests.shipped_apps import AGENTS, SHIPPED_APPS, shipped_agents_dir

ROOT = Path(__file__).resolve().parents[1]
COMPOSE_FILE = ROOT / "docker-compose.yml"
COMPOSE_SCHEMA = ROOT / "tests" / "data" / "compose-spec.json"
DOCKERFILE = ROOT / "Dockerfile"
DOCKERIGNORE = ROOT / ".dockerignore"
ENTRYPOINT = ROOT / "docker" / "entrypoint.sh"
ENV_EXAMPLE = ROOT / ".env.example"

# What the runtime image must hold (relative to the build context).
RUNTIME_SOURCES = {"app", "migrations", "alembic.ini", "agents"}
# AGENTD_* variables read outside the Settings class: by the Gemini backend and by logging set-up.
READ_OUTSIDE_SETTINGS = {GEMINI_BASE_URL_ENV, "AGENTD_LOG_LEVEL"}
# Where the variables a model backend or a shipped app reads are named (not an app a user added).
MODEL_SOURCES = [
    *(ROOT / "app" / "models").glob("*.py"),
    *(path for name in SHIPPED_APPS for path in (AGENTS / name).glob("*.py")),
]
# What such a variable's name looks like: a credential, an endpoint, an API version, a model name,
# or Google's (google-genai's Vertex switches and project).
_MODEL_VARIABLE = re.compile(
    r"[\"`']((?:[A-Z][A-Z0-9]*_)+(?:API_KEY|API_BASE|BASE_URL|API_VERSION|AUTH_TOKEN|AD_TOKEN"
    r"|ENDPOINT|ORG_ID|PROJECT_ID|AGENT_MODEL)|GOOGLE_[A-Z0-9_]+)[\"`']"
)

STARTUP_SECONDS = 60


# --- docker-compose.yml ---------------------------------------------------------------------

_VARIABLE = re.compile(
    r"\$(?:(?P<escaped>\$)|\{(?P<braced>[A-Za-z_][A-Za-z0-9_]*)(?:(?P<op>:?[-?])(?P<arg>[^}]*))?\}"
    r"|(?P<named>[A-Za-z_][A-Za-z0-9_]*))"
)


def interpolate(value: Any, environment: dict[str, str]) -> Any:
    """Compose's variable interpolation (`$$`, `$V`, `${V}`, `${V:-d}`, `${V-d}`) on values."""
    if isinstance(value, dict):
        return {key: interpolate(item, environment) for key, item in value.items()}
    if isinstance(value, list):
        return [interpolate(item, environment) for item in value]
    if not isinstance(value, str):
        return value

    def substitute(match: re.Match[str]) -> str:
        if match["escaped"]:
            return "$"
        name = match["braced"] or match["named"]
        op, arg = match["op"], match["arg"] or ""
        if op is None:
            return environment.get(name, "")
        if op.startswith(":") and not environment.get(name):
            unset = True
        else:
            unset = name not in environment
        if not unset:
            return environment[name]
        if op.endswith("?"):
            raise ValueError(f"required variable {name} is unset: {arg}")
        return arg

    return _VARIABLE.sub(substitute, value)


def load_compose() -> dict[str, Any]:
    """docker-compose.yml as compose sees it with no variable set (every default applies)."""
    document = yaml.safe_load(COMPOSE_FILE.read_text())
    assert isinstance(document, dict)
    interpolated: dict[str, Any] = interpolate(document, {})
    return interpolated


def compose_validator() -> jsonschema.protocols.Validator:
    schema = json.loads(COMPOSE_SCHEMA.read_text())
    # The schema names its draft as "http://json-schema.org/draft/2019-09/schema#", the spelling
    # before the draft's final "https://...schema": pick the validator by the draft's name.
    drafts: dict[str, type[jsonschema.protocols.Validator]] = {
        "draft-07": jsonschema.Draft7Validator,
        "draft/2019-09": jsonschema.Draft201909Validator,
        "draft/2020-12": jsonschema.Draft202012Validator,
    }
    (validator_class,) = [cls for key, cls in drafts.items() if key in schema["$schema"]]
    validator_class.check_schema(schema)
    return validator_class(schema, format_checker=validator_class.FORMAT_CHECKER)


def schema_errors(document: dict[str, Any]) -> list[str]:
    errors = compose_validator().iter_errors(document)
    return [
        f"{'/'.join(map(str, error.absolute_path)) or '<root>'}: {error.message}"
        for error in errors
    ]


def environment_of(service: dict[str, Any]) -> dict[str, str | None]:
    """A service's `environment`, list or mapping form, as a mapping (None: taken from the host)."""
    raw = service.get("environment", {})
    if isinstance(raw, list):
        pairs = (item.split("=", 1) if "=" in item else (item, None) for item in raw)
        return dict(pairs)
    return {key: None if value is None else str(value) for key, value in raw.items()}


def test_compose_file_matches_the_compose_specification() -> None:
    assert schema_errors(load_compose()) == []


def test_compose_schema_rejects_what_compose_would() -> None:
    """The validator bites: an unknown condition or a misspelt key is an error."""
    document = load_compose()
    document["services"]["api"]["depends_on"]["db"]["condition"] = "service_ready"
    assert any("service_ready" in error for error in schema_errors(document))
    document = load_compose()
    document["services"]["api"]["helthcheck"] = document["services"]["api"].pop("healthcheck")
    assert any("helthcheck" in error for error in schema_errors(document))


def test_compose_file_has_no_obsolete_version_key() -> None:
    assert "version" not in load_compose()


def test_api_waits_for_healthy_database_and_store() -> None:
    services = load_compose()["services"]
    depends_on = services["api"]["depends_on"]
    assert depends_on["db"] == {"condition": "service_healthy"}
    assert depends_on["s3"] == {"condition": "service_healthy"}
    assert depends_on["createbucket"] == {"condition": "service_completed_successfully"}
    assert services["createbucket"]["depends_on"]["s3"] == {"condition": "service_healthy"}


@pytest.mark.parametrize("name", ["db", "s3", "api"])
def test_long_running_services_have_healthchecks(name: str) -> None:
    healthcheck = load_compose()["services"][name]["healthcheck"]
    assert healthcheck.get("disable") is not True
    test = healthcheck["test"]
    assert test
    assert test[0] in {"CMD", "CMD-SHELL"}


def test_api_healthcheck_probes_health_without_curl() -> None:
    test = load_compose()["services"]["api"]["healthcheck"]["test"]
    command = " ".join(test[1:])
    assert "/health" in command
    assert "curl" not in command


def test_database_url_points_at_the_db_service() -> None:
    services = load_compose()["services"]
    api_env = environment_of(services["api"])
    db_env = environment_of(services["db"])
    url = make_url(api_env["AGENTD_DATABASE_URL"] or "")
    assert url.drivername == "postgresql+asyncpg"
    assert url.host == "db"
    assert url.port in (None, 5432)
    assert url.username == db_env["POSTGRES_USER"]
    assert url.password == db_env["POSTGRES_PASSWORD"]
    assert url.database == db_env["POSTGRES_DB"]
    assert services["db"]["image"].startswith("postgres:15")
    volumes = services["db"]["volumes"]
    assert any(str(volume).endswith(":/var/lib/postgresql/data") for volume in volumes)
    named = str(volumes[0]).split(":", 1)[0]
    assert named in load_compose()["volumes"]


def test_blob_store_is_the_s3_service() -> None:
    services = load_compose()["services"]
    api_env = environment_of(services["api"])
    s3_env = environment_of(services["s3"])
    assert api_env["AGENTD_BLOB_STORE"] == "s3"
    assert api_env["AGENTD_S3_ENDPOINT_URL"] == "http://s3:9000"
    assert api_env["AGENTD_S3_FORCE_PATH_STYLE"] == "true"
    assert api_env["AWS_ACCESS_KEY_ID"] == s3_env["MINIO_ROOT_USER"]
    assert api_env["AWS_SECRET_ACCESS_KEY"] == s3_env["MINIO_ROOT_PASSWORD"]
    assert services["s3"]["command"][:2] == ["server", "/data"]
    bucket = api_env["AGENTD_S3_BUCKET"]
    assert bucket
    assert services["createbucket"]["command"][-1] == f"s3/{bucket}"
    mc_host = environment_of(services["createbucket"])["MC_HOST_s3"] or ""
    credentials = f"{s3_env['MINIO_ROOT_USER']}:{s3_env['MINIO_ROOT_PASSWORD']}@s3:9000"
    assert mc_host == f"http://{credentials}"


def test_api_is_built_here_serves_8000_and_requires_api_keys() -> None:
    api = load_compose()["services"]["api"]
    assert api["build"] in (".", {"context": "."})
    assert "8000:8000" in api["ports"]
    assert environment_of(api)["AGENTD_AUTH"] == "api_key"


def test_api_environment_is_valid_agentd_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every AGENTD_* variable names a setting (or one on its way) and parses as one."""
    for name in list(os.environ):
        if name.startswith("AGENTD_"):
            monkeypatch.delenv(name)
    api_env = environment_of(load_compose()["services"]["api"])
    for name, value in api_env.items():
        if value is not None:
            monkeypatch.setenv(name, value)
    settings = Settings(_env_file=None)
    unknown = {
        name
        for name in api_env
        if name.startswith("AGENTD_")
        and name.removeprefix("AGENTD_").lower() not in Settings.model_fields
        and name not in READ_OUTSIDE_SETTINGS
    }
    assert unknown == set()
    assert settings.blob_store == "s3"
    assert settings.s3_force_path_style is True
    assert settings.resolved_database_url == api_env["AGENTD_DATABASE_URL"]


# --- model credentials and .env.example -----------------------------------------------------


def model_variables() -> set[str]:
    """The environment variables app/models/ and the shipped apps name (code and docstrings)."""
    return {
        match[1]
        for source in MODEL_SOURCES
        for match in _MODEL_VARIABLE.finditer(source.read_text())
    }


def compose_variables() -> dict[str, str | None]:
    """Every `${VAR}` / `$VAR` docker-compose.yml interpolates, with its default (None: none)."""
    found: dict[str, str | None] = {}
    for match in _VARIABLE.finditer(COMPOSE_FILE.read_text()):
        if match["escaped"]:
            continue
        name = match["braced"] or match["named"]
        default = match["arg"] if match["op"] in (":-", "-") else None
        assert found.get(name, default) == default, f"{name} has two defaults in compose"
        found[name] = default
    return found


def passed_through(service: dict[str, Any]) -> set[str]:
    """The variables a service takes from the shell or `.env` as they are (no value in compose)."""
    return {name for name, value in environment_of(service).items() if value is None}


@dataclass
class ExampleLine:
    """One `NAME=value` line of .env.example, commented out or not."""

    value: str
    commented: bool


def env_example() -> dict[str, ExampleLine]:
    """.env.example's assignments (`# NAME=value` counts: it shows the default to uncomment)."""
    found: dict[str, ExampleLine] = {}
    for line in ENV_EXAMPLE.read_text().splitlines():
        match = re.fullmatch(r"(?P<hash>#\s?)?(?P<name>[A-Z][A-Z0-9_]*)=(?P<value>.*)", line)
        if match:
            assert match["name"] not in found, f"{match['name']} twice in .env.example"
            found[match["name"]] = ExampleLine(match["value"], match["hash"] is not None)
    return found


def test_the_model_variable_scan_finds_every_provider() -> None:
    """The scan below bites: it finds each backend's key and endpoint variables."""
    assert {
        "GOOGLE_API_KEY",
        "GOOGLE_GENAI_USE_VERTEXAI",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "AZURE_OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_BASE_URL",
        "AZURE_API_KEY",
        "AZURE_API_BASE",
        "OPENROUTER_API_KEY",
        "OLLAMA_API_BASE",
        GEMINI_BASE_URL_ENV,
    } <= model_variables()


@pytest.mark.parametrize("service", ["api", "worker"])
def test_every_model_variable_reaches_the_api_and_the_worker(service: str) -> None:
    """Apps run where invocations run (the worker), and the API with AGENTD_API_RUNS_INVOCATIONS:
    both get every model credential, passed through as it is set on the host (or unset)."""
    services = load_compose()["services"]
    missing = model_variables() - passed_through(services[service])
    assert missing == set(), f"{service} does not receive {sorted(missing)}"


def test_env_example_lists_every_variable_compose_reads_with_its_default() -> None:
    example = env_example()
    interpolated = compose_variables()
    assert "POSTGRES_PASSWORD" in interpolated  # the scan bites
    services = load_compose()["services"]
    from_host = passed_through(services["api"]) | passed_through(services["worker"])
    missing = (set(interpolated) | from_host) - set(example)
    assert missing == set(), f".env.example lacks {sorted(missing)}"
    for name, default in interpolated.items():
        if default is not None:
            assert example[name].value == default, f"{name}: .env.example shows another default"


def test_env_example_changes_nothing_until_edited() -> None:
    """Every line is commented out, no secret has a value, and each AGENTD_* setting shown is
    agentd's own default: a `cp .env.example .env` is safe, even for the test suite."""
    example = env_example()
    assert [name for name, line in example.items() if not line.commented] == []
    credentials = [name for name in example if re.search(r"KEY|TOKEN|SECRET", name)]
    assert "OPENAI_API_KEY" in credentials
    assert {name: example[name].value for name in credentials if example[name].value} == {}
    compose_only = set(compose_variables())
    for name, line in example.items():
        if not name.startswith("AGENTD_") or name in READ_OUTSIDE_SETTINGS | compose_only:
            continue
        field_name = name.removeprefix("AGENTD_").lower()
        assert field_name in Settings.model_fields, f"{name} is no setting"
        setting = Settings.model_fields[field_name]
        assert setting.annotation is not None
        shown = pydantic.TypeAdapter(setting.annotation).validate_python(line.value)
        assert shown == setting.get_default(call_default_factory=True), name


# --- Dockerfile -----------------------------------------------------------------------------


@dataclass
class Stage:
    """One FROM ... stage of a Dockerfile: its base, name and instructions."""

    base: str
    name: str | None
    instructions: list[tuple[str, str]] = field(default_factory=list)

    def all(self, keyword: str) -> list[str]:
        return [arguments for instruction, arguments in self.instructions if instruction == keyword]


def dockerfile_stages(text: str) -> list[Stage]:
    """Stages of a Dockerfile: comments dropped, continuation lines joined, global ARGs applied."""
    logical: list[str] = []
    pending = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        logical.append(pending + line)
        pending = ""
    assert not pending, "dangling line continuation"
    global_args: dict[str, str] = {}
    stages: list[Stage] = []
    for line in logical:
        keyword, _, arguments = line.partition(" ")
        keyword, arguments = keyword.upper(), arguments.strip()
        if keyword == "FROM":
            words = arguments.split()
            words = [word for word in words if not word.startswith("--platform")]
            base = re.sub(r"\$\{?(\w+)\}?", lambda match: global_args.get(match[1], ""), words[0])
            name = words[2] if len(words) >= 3 and words[1].upper() == "AS" else None
            stages.append(Stage(base=base, name=name))
        elif not stages:
            assert keyword == "ARG", f"{keyword} before the first FROM"
            arg_name, _, default = arguments.partition("=")
            global_args[arg_name] = default
        else:
            stages[-1].instructions.append((keyword, arguments))
    return stages


def copy_sources(arguments: str) -> tuple[list[str], list[str], str]:
    """(flags, sources, destination) of a COPY instruction, shell or JSON form."""
    words = shlex.split(arguments)
    flags = [word for word in words if word.startswith("--")]
    rest = [word for word in words if not word.startswith("--")]
    if arguments.lstrip().startswith("[") or (rest and rest[0].startswith("[")):
        rest = json.loads(" ".join(rest))
    return flags, rest[:-1], rest[-1]


def runtime_stage() -> Stage:
    return dockerfile_stages(DOCKERFILE.read_text())[-1]


def test_dockerfile_is_multi_stage_on_python_311_slim() -> None:
    stages = dockerfile_stages(DOCKERFILE.read_text())
    assert len(stages) >= 2
    builder_names = {stage.name for stage in stages[:-1]}
    final = stages[-1]
    assert final.base == "python:3.11-slim"
    copied_from = [copy_sources(arguments)[0] for arguments in final.all("COPY")]
    assert any(
        f"--from={name}" in flags for flags in copied_from for name in builder_names if name
    ), "the runtime stage copies nothing from a builder stage"


def test_dockerfile_builder_installs_from_pyproject_and_constraints() -> None:
    builder = dockerfile_stages(DOCKERFILE.read_text())[0]
    copied = {source for arguments in builder.all("COPY") for source in copy_sources(arguments)[1]}
    assert {"pyproject.toml", "constraints.txt"} <= copied
    assert any("-c constraints.txt" in command for command in builder.all("RUN"))


def test_runtime_stage_holds_only_runtime_sources() -> None:
    final = runtime_stage()
    copied = {
        source.rstrip("/")
        for arguments in final.all("COPY")
        if not any(flag.startswith("--from") for flag in copy_sources(arguments)[0])
        for source in copy_sources(arguments)[1]
    }
    assert copied >= RUNTIME_SOURCES
    assert copied - RUNTIME_SOURCES == {"docker/entrypoint.sh"}
    assert final.all("WORKDIR")[-1] == "/app"


def test_runtime_stage_runs_as_a_non_root_user() -> None:
    users = runtime_stage().all("USER")
    assert users, "no USER in the runtime stage"
    user = users[-1].split(":", 1)[0]
    assert user not in {"root", "0"}
    if user.isdigit():
        assert int(user) >= 1000


def test_runtime_stage_exposes_8000_and_checks_health_with_python() -> None:
    final = runtime_stage()
    assert "8000" in " ".join(final.all("EXPOSE")).split()
    (healthcheck,) = final.all("HEALTHCHECK")
    assert "/health" in healthcheck
    assert "python" in healthcheck
    assert "curl" not in healthcheck


def test_entrypoint_is_the_script() -> None:
    final = runtime_stage()
    (entrypoint,) = final.all("ENTRYPOINT")
    command = json.loads(entrypoint)
    assert isinstance(command, list)
    assert command[-1].endswith("entrypoint.sh")
    workdir = final.all("WORKDIR")[-1]
    destinations = {
        str(Path(workdir) / copy_sources(arguments)[2]): copy_sources(arguments)[1]
        for arguments in final.all("COPY")
    }
    assert destinations[command[-1]] == ["docker/entrypoint.sh"]


def script_commands() -> list[str]:
    return [
        line.strip()
        for line in ENTRYPOINT.read_text().splitlines()
        if line.strip() and not line.strip().startswith("#")
    ]


def test_entrypoint_migrates_before_serving() -> None:
    commands = script_commands()
    assert commands[0] == "set -eu"
    migrate = commands.index("alembic upgrade head")
    serve = next(i for i, command in enumerate(commands) if "agentd serve" in command)
    assert migrate < serve
    assert commands[serve].startswith("exec agentd serve")
    assert '--host "${HOST:-0.0.0.0}"' in commands[serve]
    assert '--port "${PORT:-8000}"' in commands[serve]


def test_dockerignore_keeps_what_the_build_needs() -> None:
    patterns = [
        line.strip()
        for line in DOCKERIGNORE.read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    assert not any(pattern.startswith("!") for pattern in patterns)  # the check below is simple

    def ignored(path: str) -> bool:
        parts = Path(path).parts
        prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
        return any(
            fnmatch.fnmatch(prefix, pattern.removeprefix("**/"))
            or fnmatch.fnmatch(Path(prefix).name, pattern.removeprefix("**/"))
            for pattern in patterns
            for prefix in prefixes
        )

    needed = [
        "pyproject.toml",
        "constraints.txt",
        "README.md",
        "alembic.ini",
        "app/main.py",
        "migrations/env.py",
        "agents/capital_agent/agent.py",
        "docker/entrypoint.sh",
    ]
    assert [path for path in needed if ignored(path)] == []
    for path in needed:
        assert (ROOT / path).exists(), path
    assert all(ignored(path) for path in [".venv/bin/python", "data/agentd.db", ".git/HEAD"])


# --- the entrypoint, for real ---------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.fixture
def entrypoint_server(tmp_path: Path) -> Iterator[tuple[str, Path, dict[str, str]]]:
    """docker/entrypoint.sh run from the repo root on SQLite and 127.0.0.1: (url, db, env)."""
    database = tmp_path / "x.db"
    bin_dir = Path(sys.executable).parent
    assert (bin_dir / "alembic").exists()
    assert (bin_dir / "agentd").exists()
    port = free_port()
    env = {name: value for name, value in os.environ.items() if not name.startswith("AGENTD_")}
    env |= {
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        "AGENTD_DATABASE_URL": f"sqlite+aiosqlite:///{database}",
        "AGENTD_AGENTS_DIR": str(shipped_agents_dir(tmp_path / "agents")),
        "AGENTD_DATA_DIR": str(tmp_path / "data"),
        "HOST": "127.0.0.1",
        "PORT": str(port),
    }
    log = tmp_path / "entrypoint.log"
    with log.open("wb") as output:
        process = subprocess.Popen(
            ["sh", str(ENTRYPOINT)], cwd=ROOT, env=env, stdout=output, stderr=subprocess.STDOUT
        )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(process, url, log, name="entrypoint", seconds=STARTUP_SECONDS)
        yield url, database, env
    finally:
        stop(process, signal.SIGTERM, seconds=15)


def test_entrypoint_migrates_then_serves(
    entrypoint_server: tuple[str, Path, dict[str, str]],
) -> None:
    url, database, _ = entrypoint_server
    assert httpx.get(f"{url}/health", timeout=5).json()["status"] == "ok"
    apps = httpx.get(f"{url}/list-apps", timeout=5).json()
    assert "capital_agent" in apps  # AGENTD_AGENTS_DIR was honoured
    heads = ScriptDirectory.from_config(Config(str(ROOT / "alembic.ini"))).get_heads()
    with sqlite3.connect(database) as connection:
        versions = [row[0] for row in connection.execute("SELECT version_num FROM alembic_version")]
    assert versions == heads
    assert len(heads) == 1


def test_dockerfile_healthcheck_command_passes_against_the_server(
    entrypoint_server: tuple[str, Path, dict[str, str]],
) -> None:
    _, _, env = entrypoint_server
    (healthcheck,) = runtime_stage().all("HEALTHCHECK")
    command = healthcheck.split(" CMD ", 1)[1]
    result = subprocess.run(
        ["sh", "-c", command], env=env, capture_output=True, timeout=30, check=False
    )
    assert result.returncode == 0, result.stderr.decode()


def test_a_worker_service_runs_the_invocations_the_api_queues() -> None:
    """Issue 19: the API only queues invocations; `worker` (same image, `agentd worker`) runs
    them, on the same database and blob store, once the API has migrated the schema."""
    services = load_compose()["services"]
    worker = services["worker"]
    assert worker["image"] == services["api"]["image"]
    assert worker["command"] == ["agentd", "worker"]
    assert worker["depends_on"]["api"] == {"condition": "service_healthy"}
    api_env, worker_env = environment_of(services["api"]), environment_of(worker)
    assert api_env["AGENTD_RUN_INVOCATIONS"] == "false"
    for shared in ("AGENTD_DATABASE_URL", "AGENTD_BLOB_STORE", "AGENTD_S3_BUCKET"):
        assert worker_env[shared] == api_env[shared]
    assert "AGENTD_RUN_INVOCATIONS" not in worker_env
    assert worker["healthcheck"] == {"disable": True}  # the image's probes HTTP
    assert worker["stop_grace_period"] == "30s"  # above AGENTD_SHUTDOWN_GRACE_SECONDS (20)


# --- Makefile: what `make run` installs -----------------------------------------------------

FRESH_VENV = "/nonexistent/agentd-venv"


def make_plan(target: str, *variables: str) -> list[str]:
    """The commands `make TARGET` would run on a fresh machine (a dry run, every stamp stale)."""
    # Under `make test` the suite is a sub-make's child: its flags must not reach this make.
    env = {k: v for k, v in os.environ.items() if k not in {"MAKEFLAGS", "MFLAGS", "MAKELEVEL"}}
    command = ["make", "--dry-run", "--always-make", "--no-print-directory", target]
    result = subprocess.run(
        [*command, f"VENV={FRESH_VENV}", *variables],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return result.stdout.splitlines()


SERVE_INSTALL = f"{FRESH_VENV}/bin/python -m pip install --quiet -c constraints.txt -e ."
DEV_INSTALL = f"{FRESH_VENV}/bin/python -m pip install --quiet -c constraints.txt -e '.[dev]'"


@pytest.mark.parametrize("target", ["run", "run-pg", "migrate"])
def test_serving_targets_install_only_what_serving_needs(target: str) -> None:
    plan = make_plan(target)
    assert plan[0] == f"python3 -m venv {FRESH_VENV}"
    assert SERVE_INSTALL in plan
    assert not [command for command in plan if "[dev]" in command]


@pytest.mark.parametrize("target", ["test", "lint", "typecheck", "bench", "fuzz"])
def test_development_targets_add_the_dev_extra_on_top(target: str) -> None:
    plan = make_plan(target)
    assert plan.index(SERVE_INSTALL) < plan.index(DEV_INSTALL)


def test_make_run_and_run_pg_serve_on_host_and_port() -> None:
    address = ("HOST=127.0.0.2", "PORT=9998")
    assert make_plan("run", *address)[-1] == (
        f"{FRESH_VENV}/bin/agentd serve --migrate --host 127.0.0.2 --port 9998"
    )
    assert make_plan("run-pg", *address)[-1] == (
        f"{FRESH_VENV}/bin/python -m scripts.run_pg --host 127.0.0.2 --port 9998"
    )
