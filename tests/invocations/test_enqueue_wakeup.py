"""`multitaskStrategy: enqueue`: queued runs start in arrival order, woken when the session frees.

Runs are driven through `InvocationManager` on every database backend with the `gated_agent` test
app, whose tool waits for a gate file, so a first run can hold the session while others queue.
The fallback poll is set far beyond the tests' deadlines (`ENQUEUE_POLL_SECONDS`), so a queued run
that starts at all was started by a wake-up; which one is read from the
`agentd_enqueue_wakeups_total{cause}` metric, never from timings.
"""

import asyncio
import itertools
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from app.db.engine import create_db_engine
from app.invocations.manager import InvocationManager, RunHandle
from app.invocations.models import CreateInvocationRequest, Invocation, SessionRef
from app.invocations.registry import AppRegistry
from app.invocations.store import InvocationStore
from app.invocations.wakeup import SessionWaiters
from app.observability.metrics import Metrics, set_current
from app.sessions.database import DatabaseSessionService
from app.settings import Settings
from tests.conftest import DB_BACKENDS, engine_for
from tests.live_server import build_agents_dir

REF = SessionRef("gated_agent", "u1", "s")
QUEUED = 8
#: Far beyond every deadline below: a queued run that starts was woken, not polled.
NO_POLL_SECONDS = 3600.0
DEADLINE_SECONDS = 30.0


@dataclass
class Replica:
    """One manager (a replica) with its own engine, store and session service."""

    manager: InvocationManager
    sessions: DatabaseSessionService
    db_engine: AsyncEngine


@dataclass
class Cluster:
    """The replicas of one test on one database, the gate folder and the metrics they record to."""

    gates: Path
    metrics: Metrics
    replicas: list[Replica] = field(default_factory=list)

    def open_gate(self) -> None:
        """Let the session's waiting tools finish."""
        (self.gates / f"{REF.session_id}.open").touch()

    def wakeups(self, cause: str) -> float:
        """How many times a queued run tried again prompted by `cause`."""
        value = self.metrics.registry.get_sample_value(
            "agentd_enqueue_wakeups_total", {"cause": cause}
        )
        return value or 0.0

    def tries(self) -> float:
        """How many lease attempts queued runs made (first tries included)."""
        value = self.metrics.registry.get_sample_value(
            "agentd_db_transaction_seconds_count", {"operation": "try_acquire"}
        )
        return value or 0.0


def _request(strategy: str = "enqueue") -> CreateInvocationRequest:
    return CreateInvocationRequest.model_validate(
        {
            "newMessage": {"role": "user", "parts": [{"text": "go"}]},
            "mode": "background",
            "multitaskStrategy": strategy,
        }
    )


async def _until(condition: Callable[[], bool]) -> None:
    """Poll `condition` until it holds (fails after DEADLINE_SECONDS)."""
    deadline = time.monotonic() + DEADLINE_SECONDS
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.01)


def _started_in_turn(runs: list[Invocation]) -> list[str]:
    """The runs' ids in the order they started; each started after the one before it ended."""
    spans = sorted((i.start_time, i.end_time, i.id) for i in runs if i.start_time and i.end_time)
    assert len(spans) == len(runs), "every run started and ended"
    for (_, ended, _), (started, _, _) in itertools.pairwise(spans):
        assert ended <= started
    return [span[2] for span in spans]


async def _ended(replica: Replica, handles: list[RunHandle]) -> list[Invocation]:
    async with asyncio.timeout(DEADLINE_SECONDS):
        return [await replica.manager.wait(handle) for handle in handles]


#: Builds started replicas on one fresh database: (backend, replicas, enqueue timeout).
ClusterFactory = Callable[[str, int, float], Awaitable[Cluster]]


@pytest.fixture
async def cluster_factory(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[ClusterFactory]:
    """Builds `count` started replicas on one fresh database of `backend`, session `s` made."""
    gates = tmp_path / "gates"
    gates.mkdir()
    monkeypatch.setenv("AGENTD_TEST_GATES", str(gates))
    metrics = Metrics(process_metrics=False)
    previous = set_current(metrics)
    agents_dir = build_agents_dir(tmp_path / "agents")
    clusters: list[Cluster] = []

    async def build(
        backend: str, count: int = 1, enqueue_timeout: float = DEADLINE_SECONDS
    ) -> Cluster:
        first = engine_for(request, backend, tmp_path)
        cluster = Cluster(gates, metrics)
        clusters.append(cluster)
        for index in range(count):
            # Another replica: its own engine (pool, listener) on the same database.
            db_engine = first if index == 0 else _same_database(first)
            sessions = DatabaseSessionService(db_engine)
            settings = Settings(
                agents_dir=agents_dir,
                replica_id=f"replica-{index}",
                enqueue_timeout_seconds=enqueue_timeout,
                enqueue_poll_seconds=NO_POLL_SECONDS,
            )
            manager = InvocationManager(
                store=InvocationStore(db_engine),
                registry=AppRegistry(agents_dir),
                session_service=sessions,
                artifact_service=None,
                memory_service=None,
                settings=settings,
            )
            await manager.startup()
            cluster.replicas.append(Replica(manager, sessions, db_engine))
        await cluster.replicas[0].sessions.create_session(
            app_name=REF.app_name, user_id=REF.user_id, session_id=REF.session_id
        )
        return cluster

    try:
        yield build
    finally:
        for cluster in clusters:
            cluster.open_gate()  # nothing is left waiting on a gate
            for replica in cluster.replicas:
                await replica.manager.shutdown()
                await replica.sessions.close()
                await replica.db_engine.dispose()
        set_current(previous)


def _same_database(db_engine: AsyncEngine) -> AsyncEngine:
    return create_db_engine(db_engine.url.render_as_string(hide_password=False), pool_size=5)


@pytest.mark.parametrize("backend", DB_BACKENDS)
async def test_queued_runs_start_one_at_a_time_in_arrival_order_woken_by_each_end(
    backend: str, cluster_factory: ClusterFactory
) -> None:
    cluster = await cluster_factory(backend, 1, DEADLINE_SECONDS)
    replica = cluster.replicas[0]
    holder = await replica.manager.start(REF, _request())
    assert holder.invocation.status == "running"
    queued = [await replica.manager.start(REF, _request()) for _ in range(QUEUED)]
    assert {h.invocation.status for h in queued} == {"queued"}
    # Every queued run has tried once and lined up before the session frees.
    await _until(lambda: cluster.tries() >= QUEUED)

    cluster.open_gate()
    ended = await _ended(replica, [holder, *queued])

    assert [i.status for i in ended] == ["completed"] * (QUEUED + 1)
    arrival = [h.invocation.id for h in [holder, *queued]]
    assert _started_in_turn(ended) == arrival
    session = await replica.sessions.get_session(
        app_name=REF.app_name, user_id=REF.user_id, session_id=REF.session_id
    )
    assert session is not None
    # Each run's events are contiguous, in arrival order.
    runs_in_history = [e.invocation_id for e in session.events]
    assert list(dict.fromkeys(runs_in_history)) == arrival
    assert len(runs_in_history) == 4 * len(arrival)
    # Each queued run was started by the end of the one before it, never by the poll.
    assert cluster.wakeups("release") >= QUEUED
    assert cluster.wakeups("poll") == 0


@pytest.mark.parametrize("backend", DB_BACKENDS)
async def test_a_queued_run_cancelled_while_waiting_never_runs_and_the_next_one_does(
    backend: str, cluster_factory: ClusterFactory
) -> None:
    cluster = await cluster_factory(backend, 1, DEADLINE_SECONDS)
    replica = cluster.replicas[0]
    holder = await replica.manager.start(REF, _request())
    cancelled, last = [await replica.manager.start(REF, _request()) for _ in range(2)]
    await _until(lambda: cluster.tries() >= 2)

    assert (await replica.manager.cancel(REF, cancelled.invocation.id)).status == "cancelled"
    cluster.open_gate()
    ended = await _ended(replica, [holder, cancelled, last])

    assert [i.status for i in ended] == ["completed", "cancelled", "completed"]
    assert ended[1].start_time is None
    session = await replica.sessions.get_session(
        app_name=REF.app_name, user_id=REF.user_id, session_id=REF.session_id
    )
    assert session is not None
    assert cancelled.invocation.id not in {e.invocation_id for e in session.events}
    assert cluster.wakeups("poll") == 0


async def test_an_enqueued_run_gives_up_with_session_busy_after_the_enqueue_timeout(
    cluster_factory: ClusterFactory,
) -> None:
    cluster = await cluster_factory("sqlite", 1, 0.05)
    manager = cluster.replicas[0].manager
    holder = await manager.start(REF, _request())
    waiting = await manager.start(REF, _request())

    gave_up = await _ended(cluster.replicas[0], [waiting])
    assert gave_up[0].status == "failed"
    assert (gave_up[0].error or {}).get("type") == "session-busy"
    cluster.open_gate()
    assert (await _ended(cluster.replicas[0], [holder]))[0].status == "completed"


@pytest.mark.postgres
async def test_a_run_queued_on_another_replica_is_woken_by_the_databases_notification(
    cluster_factory: ClusterFactory,
) -> None:
    cluster = await cluster_factory("postgres", 2, DEADLINE_SECONDS)
    a, b = cluster.replicas
    holder = await a.manager.start(REF, _request())
    queued = [await b.manager.start(REF, _request()) for _ in range(3)]
    await _until(lambda: cluster.tries() >= len(queued))

    cluster.open_gate()
    ended = await _ended(b, queued)
    first = (await _ended(a, [holder]))[0]

    assert [i.status for i in ended] == ["completed"] * len(queued)
    assert _started_in_turn([first, *ended]) == [h.invocation.id for h in [holder, *queued]]
    # B's first queued run was woken by A's release, which only the notification carries;
    # the ones after it by B's own ends. No poll ran (it is an hour away).
    assert cluster.wakeups("notification") >= 1
    assert cluster.wakeups("release") >= len(queued) - 1
    assert cluster.wakeups("poll") == 0


async def test_a_wake_goes_to_the_oldest_waiter_and_is_kept_until_it_waits() -> None:
    waiters = SessionWaiters()
    with (
        waiters.waiting(1, (2.0, "b")) as younger,
        waiters.waiting(1, (1.0, "z")) as older,
        waiters.waiting(2, (0.0, "other")) as elsewhere,
    ):
        waiters.wake(1)  # while `older` is busy trying: the wake must not be lost
        assert await older.wait(NO_POLL_SECONDS) == "release"
        assert await younger.wait(0) == "poll"
        assert await elsewhere.wait(0) == "poll"
        waiters.wake_all()
        assert await older.wait(NO_POLL_SECONDS) == "reconnect"
        assert await elsewhere.wait(NO_POLL_SECONDS) == "reconnect"
    waiters.wake(1)  # nobody in line: nothing to do
