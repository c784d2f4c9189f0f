"""`agentd worker`: a process that runs invocations without serving HTTP.

API replicas with AGENTD_RUN_INVOCATIONS=false queue every invocation for workers; a worker
claims queued ones and takes over those whose process died (`InvocationManager`), up to
AGENTD_WORKER_CONCURRENCY at once, woken by PostgreSQL's NOTIFY. On SIGTERM or SIGINT it stops
claiming, lets its runs go on for AGENTD_SHUTDOWN_GRACE_SECONDS and hands the rest back to the
queue, where another process resumes them from their last committed event.
"""

import asyncio
import logging
import signal

from app.invocations.registry import AppRegistry
from app.observability import Metrics, set_current
from app.runtime import running
from app.settings import Settings

logger = logging.getLogger("agentd.worker")


async def run_worker(settings: Settings) -> None:
    """Run invocations until SIGTERM or SIGINT, then shut down gracefully."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    previous = set_current(Metrics())
    worker_settings = settings.model_copy(update={"run_invocations": True})
    try:
        async with running(worker_settings, AppRegistry(settings.agents_dir)) as services:
            logger.info(
                "worker %s running invocations (concurrency %d)",
                services.invocation_manager.replica_id,
                settings.worker_concurrency,
            )
            await stop.wait()
            logger.info("worker stopping: handing back what does not end in time")
    finally:
        set_current(previous)
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(sig)
