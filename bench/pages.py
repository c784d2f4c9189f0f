"""Does a 100-event page cost the same on a 100-event and a 10,000-event session?

Seeds two sessions through the session service (SQLite file), starts `agentd serve` on it, and
times `GET .../events?pageSize=100` (first page, and the last page via afterSeq) and
`GET .../sessions/{sid}?numRecentEvents=100`, printing p50/p99 in ms as JSON.
Run: `python -m bench.pages`.
"""

import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

PROJECT_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT_ROOT))

from app.db.engine import create_db_engine  # noqa: E402
from app.db.migrate import upgrade  # noqa: E402
from app.sessions.database import DatabaseSessionService  # noqa: E402
from app.sessions.models import Event, EventActions  # noqa: E402
from tests.live_server import LiveServer  # noqa: E402

APP = "capital_agent"


async def seed(url: str, sizes: dict[str, int]) -> None:
    """Sessions named after their sizes, filled with small state events."""
    engine = create_db_engine(url)
    service = DatabaseSessionService(engine, history_cache_events=0)
    for sid, count in sizes.items():
        session = await service.create_session(app_name=APP, user_id="u", session_id=sid)
        for i in range(count):
            await service.append_event(
                session, Event(author="agent", actions=EventActions(state_delta={"i": i}))
            )
    await engine.dispose()


def timings(
    http: httpx.Client, path: str, params: dict[str, Any], repeats: int
) -> dict[str, float]:
    """p50/p99 latency of one GET, in ms."""
    samples = []
    for _ in range(repeats):
        started = time.perf_counter()
        http.get(path, params=params).raise_for_status()
        samples.append((time.perf_counter() - started) * 1000)
    samples.sort()
    return {
        "p50_ms": round(statistics.median(samples), 2),
        "p99_ms": round(samples[int(0.99 * (len(samples) - 1))], 2),
    }


def run(small: int = 100, large: int = 10_000, repeats: int = 50) -> dict[str, Any]:
    """Seed, serve, measure."""
    with tempfile.TemporaryDirectory(prefix="agentd-pages-") as tmp:
        root = Path(tmp)
        url = f"sqlite+aiosqlite:///{root / 'data' / 'agentd.db'}"
        (root / "data").mkdir()
        upgrade(url)
        asyncio.run(seed(url, {"small": small, "large": large}))
        server = LiveServer(
            root,
            {"AGENTD_DATABASE_URL": url, "AGENTD_AGENTS_DIR": str(PROJECT_ROOT / "agents")},
        ).start()
        figures: dict[str, Any] = {}
        try:
            with httpx.Client(base_url=server.url, timeout=60) as http:
                for sid, count in (("small", small), ("large", large)):
                    base = f"/apps/{APP}/users/u/sessions/{sid}"
                    figures[f"{sid}_{count}_events"] = {
                        "first_page": timings(http, f"{base}/events", {"pageSize": 100}, repeats),
                        "last_page": timings(
                            http,
                            f"{base}/events",
                            {"pageSize": 100, "afterSeq": max(count - 100, 0)},
                            repeats,
                        ),
                        "session_recent_100": timings(
                            http, base, {"numRecentEvents": 100}, repeats
                        ),
                    }
        finally:
            server.stop()
        return figures


if __name__ == "__main__":
    sys.stdout.write(json.dumps(run(), indent=2) + "\n")
