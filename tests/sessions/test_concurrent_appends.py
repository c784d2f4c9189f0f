"""Two OS processes append to one session at once: the optimistic check loses nothing."""

import json
import subprocess
import sys
from pathlib import Path

from sqlalchemy import select

from app.db.engine import create_db_engine
from app.db.tables import StorageEvent
from app.sessions.database import DatabaseSessionService

ATTEMPTS = 50
PROJECT_ROOT = Path(__file__).resolve().parents[2]


async def test_two_processes_appending_keep_seq_gap_free_and_lose_no_delta(
    db_url: str, tmp_path: Path
) -> None:
    engine = create_db_engine(db_url)
    service = DatabaseSessionService(engine)
    await service.create_session(app_name="app", user_id="u", session_id="race")
    go = tmp_path / "go"
    workers = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.sessions.append_worker",
                db_url,
                "app",
                "u",
                "race",
                str(ATTEMPTS),
                str(go),
            ],
            cwd=PROJECT_ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    go.touch()
    results = []
    for worker in workers:
        out, err = worker.communicate(timeout=120)
        assert worker.returncode == 0, err
        results.append(json.loads(out))

    print("worker results", results)  # noqa: T201 - shown with -s, evidence the race happened
    committed = sum(r["committed"] for r in results)
    assert all(r["committed"] + r["conflicts"] == ATTEMPTS for r in results)
    async with engine.connect() as connection:
        seqs = list((await connection.scalars(select(StorageEvent.seq).order_by("seq"))).all())
    assert seqs == list(range(1, committed + 1))
    session = await service.get_session(app_name="app", user_id="u", session_id="race")
    assert session is not None
    assert session.state["counter"] == committed == session.last_seq
    await engine.dispose()
