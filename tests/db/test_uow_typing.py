"""A unit of work that reaches past the `Db` protocol fails type checking, on every backend.

Both a SQLAlchemy `Connection` and the fast path's `FastConnection` satisfy `Db`; a repository
that used something only one of them has (the raw sqlite3 handle, ORM sessions) would work on one
backend and break on the other, so mypy is what must refuse it.
"""

import textwrap
from pathlib import Path

from mypy import api

PROJECT_ROOT = Path(__file__).resolve().parents[2]

_UNIT = """
from app.db.repositories.sessions import SESSION_PK
from app.db.uow import Db, UnitOfWork


async def run(uow: UnitOfWork) -> object:
    def unit(db: Db) -> object:
        {body}

    return await uow.write("typing-check", unit)
"""


def _mypy(body: str, tmp_path: Path) -> tuple[str, int]:
    path = tmp_path / "unit_under_check.py"
    path.write_text(textwrap.dedent(_UNIT).format(body=body))
    out, err, status = api.run(["--config-file", str(PROJECT_ROOT / "pyproject.toml"), str(path)])
    return out + err, status


def test_a_unit_using_only_the_db_protocol_type_checks(tmp_path: Path) -> None:
    out, status = _mypy('return db.execute(SESSION_PK, {"k_app": "a"}).scalar()', tmp_path)
    assert status == 0, out


def test_a_unit_reaching_for_the_raw_sqlite_connection_fails_type_checking(
    tmp_path: Path,
) -> None:
    out, status = _mypy('return db.connection.driver_connection.execute("SELECT 1")', tmp_path)
    assert status == 1
    assert '"Db" has no attribute "connection"' in out


def test_a_unit_using_an_orm_session_call_fails_type_checking(tmp_path: Path) -> None:
    out, status = _mypy("return db.scalars(SESSION_PK)", tmp_path)
    assert status == 1
    assert '"Db" has no attribute "scalars"' in out
