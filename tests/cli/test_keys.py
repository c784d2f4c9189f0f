"""`agentd keys`: create needs a name and says what it made, revoke takes an id or the key."""

import asyncio
from pathlib import Path

import pytest

from app.db.engine import create_db_engine
from app.security.api_keys import ApiKeyService
from tests.cli.conftest import Agentd
from tests.conftest import fresh_sqlite_url


@pytest.fixture
def keyed(agentd: Agentd, sqlite_template: Path) -> Agentd:
    """The command on a migrated database."""
    agentd.env["AGENTD_DATABASE_URL"] = fresh_sqlite_url(sqlite_template, agentd.root)
    return agentd


def _verifies(agentd: Agentd, token: str) -> bool:
    async def verify() -> bool:
        db_engine = create_db_engine(agentd.env["AGENTD_DATABASE_URL"], pool_size=1)
        try:
            return await ApiKeyService(db_engine).verify(token) is not None
        finally:
            await db_engine.dispose()

    return asyncio.run(verify())


def test_create_without_a_name_is_a_usage_error_and_makes_no_key(keyed: Agentd) -> None:
    result = keyed("keys", "create")
    assert result.exit_code == 2
    assert "agentd keys create NAME" in result.stderr
    assert keyed("keys", "list").stdout == ""


def test_create_prints_the_key_alone_on_stdout_and_its_scope_on_stderr(keyed: Agentd) -> None:
    result = keyed("keys", "create", "ci", "--app", "capital_agent", "--user", "alice")
    assert result.exit_code == 0, result.output
    token = result.stdout.strip()
    key_id = token.split("_")[1]
    assert token.startswith(f"agentd_{key_id}_")
    assert f"created key {key_id} 'ci' (apps=capital_agent user=alice admin=no)" in result.stderr
    assert _verifies(keyed, token)
    listed = keyed("keys", "list").stdout
    assert listed == f"{key_id}\tactive\tci\tapps=capital_agent user=alice admin=no\n"


def test_the_name_option_of_earlier_scripts_still_names_the_key(keyed: Agentd) -> None:
    result = keyed("keys", "create", "--name", "bench", "--admin")
    assert result.exit_code == 0, result.output
    assert "'bench' (apps=* user=* admin=yes)" in result.stderr


def test_revoke_by_id_says_what_it_revoked(keyed: Agentd) -> None:
    token = keyed("keys", "create", "ops").stdout.strip()
    key_id = token.split("_")[1]
    result = keyed("keys", "revoke", key_id)
    assert result.exit_code == 0, result.output
    assert result.stdout == f"revoked key {key_id} 'ops' (apps=* user=* admin=no).\n"
    assert not _verifies(keyed, token)
    again = keyed("keys", "revoke", key_id)
    assert again.exit_code == 0
    assert f"key {key_id} 'ops' was revoked already" in again.stdout


def test_revoke_takes_the_whole_key_string(keyed: Agentd) -> None:
    token = keyed("keys", "create", "laptop").stdout.strip()
    result = keyed("keys", "revoke", token)
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(f"revoked key {token.split('_')[1]} 'laptop'")
    assert not _verifies(keyed, token)


def test_revoke_of_nothing_that_matches_fails_and_revokes_nothing(keyed: Agentd) -> None:
    token = keyed("keys", "create", "kept").stdout.strip()
    key_id = token.split("_")[1]
    for wrong in ("0123456789abcdef", f"agentd_{key_id}_not-its-secret"):
        result = keyed("keys", "revoke", wrong)
        assert result.exit_code == 1
        assert "no key matches" in result.stderr
        assert "not-its-secret" not in result.stderr  # a key string is never echoed
    assert _verifies(keyed, token)
