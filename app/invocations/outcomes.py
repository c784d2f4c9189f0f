"""Writing an invocation's final status, even while the database is away.

Whoever waits for a run (a `/run`, a follower, shutdown) must get an answer, so recording the end
never raises: if the database cannot take the write now, the waiters get the outcome as this
replica knows it, and the write is retried in the background until the database is back.

Every try, the first and each retry, is fenced (`InvocationStore.finish`): it commits only while
the run's attempt still holds the invocation. A retry that finds another attempt holding it (the
lease expired during the outage and a process took the run over) is dropped for good, so a
late "failed" never lands over the attempt that continues the run.

An end not recorded is not a fact yet: the lease may expire and another attempt finish the run.
So a failure the database did not take is answered as `outcome-unknown` (with the invocation's
id, to look it up), never as the failure itself: a 503 there would tell a client that nothing
was committed, when its message was.
"""

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

from app.errors import LeaseLost, OutcomeUnknown
from app.invocations.models import Invocation, InvocationStatus, SessionRef
from app.invocations.store import InvocationStore
from app.sessions.fence import Fence

logger = logging.getLogger("agentd.invocations")


class OutcomeRecorder:
    """Records invocation ends through the store; retries the ones the database refused."""

    def __init__(self, store: InvocationStore, on_released: Callable[[int], None]) -> None:
        self._store = store
        # Called with the session's key when a retried write released its lease at last.
        self._on_released = on_released
        self._pending: set[asyncio.Task[None]] = set()

    async def record(
        self,
        ref: SessionRef,
        fence: Fence,
        session_pk: int,
        *,
        mode: str,
        create_time: float,
        status: InvocationStatus,
        error: dict[str, Any] | None,
        required_action: dict[str, Any] | None = None,
    ) -> Invocation | None:
        """Store the outcome; the final resource, which waiters are answered with, or None if the
        run's attempt no longer holds the invocation (nothing written: the holder answers)."""
        invocation_id = fence.invocation_id
        final: Invocation | None = None
        try:
            final = await asyncio.shield(
                self._store.finish(fence, session_pk, status, error, required_action)
            )
        except LeaseLost:
            logger.warning("invocation %s was taken over: its end here is dropped", invocation_id)
            return None
        except Exception:
            logger.warning(
                "recording the end of invocation %s failed; retrying in the background",
                invocation_id,
                exc_info=True,
            )
            task = asyncio.create_task(
                self._retry(fence, session_pk, status, error, required_action),
                name=f"finish {invocation_id}",
            )
            self._pending.add(task)
            task.add_done_callback(self._pending.discard)
            if error is not None:
                error = OutcomeUnknown(
                    f"Invocation {invocation_id!r} ended with {error.get('type')!r} here, but "
                    "that end could not be recorded: the invocation may still be taken over "
                    "and completed. Look it up by its id; do not send the message again "
                    "without the same Idempotency-Key.",
                    invocationId=invocation_id,
                ).marshal()
        if final is not None:
            return final
        return Invocation(  # as known here (the row is gone with its session, or unreachable)
            id=invocation_id,
            app_name=ref.app_name,
            user_id=ref.user_id,
            session_id=ref.session_id,
            status=status,
            mode=mode,
            create_time=create_time,
            end_time=time.time(),
            error=error,
            required_action=required_action,
        )

    async def close(self) -> None:
        """Abandon the pending retries (shutdown): the lease then expires and a claimer takes
        the invocation over (or, its attempts used up, fails it as interrupted)."""
        pending = list(self._pending)
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)

    async def _retry(
        self,
        fence: Fence,
        session_pk: int,
        status: InvocationStatus,
        error: dict[str, Any] | None,
        required_action: dict[str, Any] | None,
    ) -> None:
        """Write the outcome once the database is back (backoff 0.5 s doubling to 10 s), unless
        another attempt holds the invocation by then (the write is dropped)."""
        invocation_id = fence.invocation_id
        delay = 0.5
        while True:
            await asyncio.sleep(delay)
            try:
                await self._store.finish(fence, session_pk, status, error, required_action)
            except LeaseLost:
                logger.warning(
                    "invocation %s was taken over during the outage: its end here is dropped",
                    invocation_id,
                )
                return
            except Exception:
                delay = min(delay * 2, 10.0)
                continue
            logger.info("recorded the end of invocation %s after a retry", invocation_id)
            self._on_released(session_pk)
            return


__all__ = ["OutcomeRecorder"]
