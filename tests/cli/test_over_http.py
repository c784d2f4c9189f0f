"""The client commands with `--url`: against a real server process over HTTP."""

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.conftest import Agentd
from tests.cli.test_in_process import CAPITAL_ANSWER
from tests.live_server import LiveServer, gated_app_env


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """One server on the shipped and test apps."""
    root = tmp_path_factory.mktemp("cli-http")
    live = LiveServer(root, gated_app_env(root, root / "gates")).start()
    try:
        yield live
    finally:
        live.stop()


@pytest.fixture
def remote(agentd: Agentd, server: LiveServer) -> Agentd:
    """The command pointed at the server by AGENTD_URL; its own data folder stays unused."""
    agentd.env["AGENTD_URL"] = server.url
    return agentd


def test_run_streams_the_answer_from_the_server(remote: Agentd) -> None:
    result = remote("run", "capital_agent", "What is the capital of France?", "--session", "h1")
    assert result.exit_code == 0, result.output
    assert result.stdout == CAPITAL_ANSWER
    assert not (remote.root / "data").exists()


def test_sessions_and_tail_read_what_the_run_left(remote: Agentd, server: LiveServer) -> None:
    run = remote("run", "capital_agent", "capital of Canada?", "--user", "eve", "--url", server.url)
    session_id = run.stderr.split()[1]
    invocation_id = re.findall(r"^invocation (\S+): completed$", run.stderr, re.MULTILINE)[0]
    listed = remote("sessions", "capital_agent", "eve")
    assert listed.exit_code == 0, listed.output
    assert re.fullmatch(rf"{session_id}\t\d{{4}}-\d\d-\d\d \d\d:\d\d:\d\d\n", listed.stdout)
    tail = remote(
        "invocations", "tail", invocation_id, "--app", "capital_agent", "--user", "eve",
        "--session", session_id,
    )  # fmt: skip
    assert tail.exit_code == 0, tail.output
    assert tail.stdout.endswith("The capital of Canada is Ottawa.\n")


def test_apps_lists_what_the_server_serves(remote: Agentd) -> None:
    result = remote("apps")
    assert result.exit_code == 0, result.output
    assert re.search(
        r"^capital_agent +Answers questions about capital cities\.$", result.stdout, re.M
    )


def test_a_problem_answer_is_one_line_with_its_type(remote: Agentd) -> None:
    result = remote("run", "no_such_app", "hello")
    assert result.exit_code == 1
    assert result.stderr == (
        "Error: the server answered 404: No app named 'no_such_app'. (app-not-found)\n"
    )


def test_a_server_that_is_not_there_is_one_line(agentd: Agentd, tmp_path: Path) -> None:
    from tests.live_server import free_port

    url = f"http://127.0.0.1:{free_port()}"
    result = agentd("apps", "--url", url)
    assert result.exit_code == 1
    assert result.stderr.startswith(f"Error: cannot reach agentd at {url}")
    assert len(result.stderr.splitlines()) == 1
    assert not (tmp_path / "data").exists()


def test_a_server_with_api_keys_needs_the_key(agentd: Agentd, tmp_path: Path) -> None:
    env = {**gated_app_env(tmp_path, tmp_path / "gates"), "AGENTD_AUTH": "api_key"}
    agentd.env.update(env)
    assert agentd("migrate").exit_code == 0
    key = agentd("keys", "create", "cli-test").stdout.strip()
    live = LiveServer(tmp_path / "server", env).start()
    try:
        refused = agentd("apps", "--url", live.url)
        assert refused.exit_code == 1
        assert refused.stderr.startswith("Error: the server answered 401: ")
        answered = agentd(
            "run", "capital_agent", "capital of Germany?", "--url", live.url, "--key", key
        )
        assert answered.exit_code == 0, answered.output
        assert answered.stdout.endswith("The capital of Germany is Berlin.\n")
    finally:
        live.stop()


def test_serve_says_where_the_console_is(server: LiveServer) -> None:
    base = f"http://127.0.0.1:{server.port}"
    assert f"agentd listening on {base} (1 process): console at {base}/console/" in (
        server.log.read_text()
    )
