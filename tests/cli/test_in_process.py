"""The client commands without `--url`: in this process, on the local data folder (SQLite,
migrated on first use), with no server."""

import re

from tests.cli.conftest import Agentd

CAPITAL_ANSWER = (
    '[call] get_capital_city {"country":"France"}\n'
    '[result] get_capital_city {"result":"Paris"}\n'
    "The capital of France is Paris.\n"
)


def _invocation_id(stderr: str) -> str:
    found = re.search(r"^invocation (\S+): completed$", stderr, re.MULTILINE)
    assert found, stderr
    return found.group(1)


def test_run_on_a_fresh_data_folder_migrates_it_and_streams_the_answer(agentd: Agentd) -> None:
    result = agentd("run", "capital_agent", "What is the capital of France?", "--session", "s1")
    assert result.exit_code == 0, result.output
    assert result.stdout == CAPITAL_ANSWER
    assert result.stderr.startswith("session s1 (user user)\n")
    assert (agentd.root / "data" / "agentd.db").is_file()


def test_run_continues_a_session_and_sessions_lists_it(agentd: Agentd) -> None:
    first = agentd("run", "capital_agent", "capital of Japan?", "--user", "ann")
    session_id = first.stderr.split()[1]
    again = agentd(
        "run", "capital_agent", "capital of Italy?", "--user", "ann", "--session", session_id
    )
    assert again.exit_code == 0, again.output
    assert again.stdout.endswith("The capital of Italy is Rome.\n")
    listed = agentd("sessions", "capital_agent", "ann")
    assert listed.exit_code == 0, listed.output
    assert re.fullmatch(
        rf"{session_id}\t\d{{4}}-\d\d-\d\d \d\d:\d\d:\d\d\t8 events\n", listed.stdout
    )
    assert agentd("sessions", "capital_agent", "bob").stdout == ""


def test_a_run_that_waits_for_the_client_says_what_it_waits_for(agentd: Agentd) -> None:
    result = agentd("run", "refund_agent", "refund 500 for order A1", "--session", "r1")
    assert result.exit_code == 0, result.output
    assert "[call] refund " in result.stdout
    assert "adk_request_confirmation" not in result.stdout
    waiting = [line for line in result.stdout.splitlines() if line.startswith("[waiting]")]
    assert len(waiting) == 1
    assert waiting[0].startswith('[waiting] confirmation of refund {"order_id":"A1","amount":')
    assert "/apps/refund_agent/users/user/sessions/r1/invocations/" in result.stderr
    assert re.search(r"^invocation \S+: requires_action$", result.stderr, re.MULTILINE)


def test_invocations_tail_prints_a_finished_invocation_as_run_showed_it(agentd: Agentd) -> None:
    run = agentd("run", "capital_agent", "What is the capital of France?", "--session", "t1")
    invocation_id = _invocation_id(run.stderr)
    tail = agentd("invocations", "tail", invocation_id, "--app", "capital_agent", "--session", "t1")
    assert tail.exit_code == 0, tail.output
    assert tail.stdout == CAPITAL_ANSWER


def test_tail_of_an_unknown_invocation_fails_with_its_problem_type(agentd: Agentd) -> None:
    agentd("run", "capital_agent", "capital of Spain?", "--session", "t2")
    tail = agentd("invocations", "tail", "e-nope", "--app", "capital_agent", "--session", "t2")
    assert tail.exit_code == 1
    assert "(invocation-not-found)" in tail.stderr


def test_run_of_an_unknown_app_fails_with_one_line(agentd: Agentd) -> None:
    result = agentd("run", "no_such_app", "hello")
    assert result.exit_code == 1
    assert result.stderr == "Error: No app named 'no_such_app'. (app-not-found)\n"


def test_apps_lists_names_and_descriptions_without_a_database(agentd: Agentd) -> None:
    result = agentd("apps")
    assert result.exit_code == 0, result.output
    rows = {}
    for line in result.stdout.splitlines():
        name, _, description = line.partition(" ")
        rows[name] = description.strip()
    assert rows["capital_agent"] == "Answers questions about capital cities."
    assert "refund_agent" in rows
    assert not (agentd.root / "data" / "agentd.db").exists()
