"""A separate OS process that races another on one session: read, then append with the check.

Usage: python -m tests.sessions.append_worker URL APP USER SESSION ATTEMPTS GO_FILE
Prints one JSON line: {"committed": n, "conflicts": m}.
"""

import asyncio
import json
import sys
import time
from pathlib import Path

from app.db.engine import create_db_engine
from app.errors import SessionConflict
from app.sessions.base import GetSessionConfig
from app.sessions.database import DatabaseSessionService
from app.sessions.models import Event, EventActions


async def run(url: str, app: str, user: str, sid: str, attempts: int, go_file: Path) -> None:
    """Wait for the start signal, then make `attempts` read-then-append tries."""
    engine = create_db_engine(url, pool_size=2)
    service = DatabaseSessionService(engine)
    deadline = time.monotonic() + 60
    while not go_file.exists():  # both workers start together so their appends overlap
        if time.monotonic() > deadline:
            raise TimeoutError("no start signal")
        await asyncio.sleep(0.005)
    committed = conflicts = 0
    for _ in range(attempts):
        session = await service.get_session(
            app_name=app, user_id=user, session_id=sid, config=GetSessionConfig(num_recent_events=0)
        )
        assert session is not None
        counter = int(session.state.get("counter", 0))
        event = Event(author="worker", actions=EventActions(state_delta={"counter": counter + 1}))
        try:
            await service.append_event(session, event)
            committed += 1
        except SessionConflict:
            conflicts += 1
    await engine.dispose()
    sys.stdout.write(json.dumps({"committed": committed, "conflicts": conflicts}) + "\n")


if __name__ == "__main__":
    url, app, user, sid, attempts, go = sys.argv[1:7]
    asyncio.run(run(url, app, user, sid, int(attempts), Path(go)))
