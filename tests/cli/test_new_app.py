"""`agentd new app`: a scaffolded app answers offline at once, and its own test passes."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.conftest import Agentd


def _clean_env() -> dict[str, str]:
    """The environment of a newcomer's shell: no AGENTD_* setting, no model key."""
    return {
        name: value
        for name, value in os.environ.items()
        if not name.startswith("AGENTD_")
        and name not in ("GOOGLE_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY")
    }


def _agentd(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "app", *args],
        cwd=cwd,
        env=_clean_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_new_app_then_run_answers_offline_in_a_fresh_folder(tmp_path: Path) -> None:
    created = _agentd(tmp_path, "new", "app", "demo")
    assert created.returncode == 0, created.stderr
    assert created.stdout == (
        "created agents/demo/ (__init__.py, agent.py, README.md, test_agent.py)\n"
        'try it: agentd run demo "hello"\n'
    )
    answered = _agentd(tmp_path, "run", "demo", "hello")
    assert answered.returncode == 0, answered.stderr
    assert answered.stdout == (
        '[call] describe_message {"text":"hello"}\n'
        '[result] describe_message {"result":"1 word(s), 5 letter(s)"}\n'
        'Hello! "hello" has 1 word(s), 5 letter(s).\n'
    )
    assert (tmp_path / "data" / "agentd.db").is_file()  # the local database, migrated


def test_the_scaffolded_apps_own_test_passes(tmp_path: Path) -> None:
    assert _agentd(tmp_path, "new", "app", "demo").returncode == 0
    tested = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "agents/demo"],
        cwd=tmp_path,
        env=_clean_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert "1 passed" in tested.stdout


def test_the_scaffold_names_the_app_and_its_readme_says_how_to_run_it(agentd: Agentd) -> None:
    result = agentd("new", "app", "helper_bot", "--dir", str(agentd.root / "mine"))
    assert result.exit_code == 0, result.output
    folder = agentd.root / "mine" / "helper_bot"
    assert sorted(path.name for path in folder.iterdir()) == [
        "README.md",
        "__init__.py",
        "agent.py",
        "test_agent.py",
    ]
    assert 'name="helper_bot"' in (folder / "agent.py").read_text()
    readme = (folder / "README.md").read_text()
    assert readme.startswith("# helper_bot: ")
    assert 'agentd run helper_bot "hello"' in readme
    assert "GOOGLE_API_KEY" in readme  # how to switch to a real model
    assert f"AGENTD_AGENTS_DIR={agentd.root / 'mine'}" in result.stdout


@pytest.mark.parametrize("name", ["9lives", "my-app", "_private", "a.b", "x" * 129])
def test_an_invalid_name_is_a_usage_error(agentd: Agentd, name: str) -> None:
    result = agentd("new", "app", name, "--dir", str(agentd.root / "mine"))
    assert result.exit_code == 2
    assert "Invalid value for NAME" in result.stderr
    assert not (agentd.root / "mine").exists()


def test_an_existing_folder_is_refused_and_left_alone(agentd: Agentd) -> None:
    folder = agentd.root / "mine" / "taken"
    folder.mkdir(parents=True)
    (folder / "agent.py").write_text("# mine\n")
    result = agentd("new", "app", "taken", "--dir", str(agentd.root / "mine"))
    assert result.exit_code == 2
    assert "exists already" in result.stderr
    assert [path.name for path in folder.iterdir()] == ["agent.py"]
    assert (folder / "agent.py").read_text() == "# mine\n"
