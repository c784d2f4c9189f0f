"""Per-turn statements search an index on SQLite, whatever the session's past (issue 30).

A long session's turn must not read every invocation the session ever had: the query that
decides whose turn it is (`_TURN`) has to search the (session_pk, status) index, which SQLite only
does when the statement names the live statuses as a plain OR of equalities.
"""

import sqlite3
from pathlib import Path

from sqlalchemy.dialects import sqlite

from app.db.migrate import upgrade
from app.db.repositories import invocations


def test_whose_turn_it_is_searches_the_live_invocations_of_the_session(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite"
    upgrade(f"sqlite+aiosqlite:///{path}", "head")
    compiled = invocations._TURN.compile(dialect=sqlite.dialect())
    params = [compiled.params[name] for name in compiled.positiontup or []]
    params = [1 if value is None else value for value in params]
    with sqlite3.connect(path) as db:
        plan = " ".join(row[3] for row in db.execute(f"EXPLAIN QUERY PLAN {compiled}", params))
    assert "USING INDEX ix_invocations_session_pk_status (session_pk=? AND status=?)" in plan, plan
