"""`agentd worker`: a process that runs invocations without serving HTTP.

API replicas with AGENTD_RUN_INVOCATIONS=false queue every invocation for workers; a worker
claims queued ones and takes over those whose process died (`InvocationManager`), up to
AGENTD_WORKER_CONCURRENCY at once, woken by PostgreSQL's NOTIFY. On SIGTERM or SIGINT it stops
claiming, lets its runs go on for AGENTD_SHUTDOWN_GRACE_SECONDS and hands the rest back to the
queue, where another process resumes them from their last committed event. With
AGENTD_WORKER_METRICS_PORT it serves its Prometheus metrics (queue depth, claims, claim latency,
attempts, the invocations it ran) on that port.
"""

import asyncio
import logging
import signal

from prometheus_client import start_http_server

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
    metrics = Metrics()
    previous = set_current(metrics)
    exposition = None
    if settings.worker_metrics_port is not None:
        # prometheus_client's own HTTP server (a thread): a worker serves no other HTTP.
        exposition, _ = start_http_server(
            settings.worker_metrics_port,
            addr=settings.worker_metrics_host,
            registry=metrics.registry,
        )
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
        if exposition is not None:
            exposition.shutdown()
            exposition.server_close()
        set_current(previous)
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(sig)
