"""The fencing token a run writes under (see docs/ARCHITECTURE.md, "Fencing").

A run's right to write to its session is its invocation's lease. The lease changes hands only
through the invocation row: a takeover sets a new `owner` and increments `attempt` in one
statement, under the row's lock. So (invocation id, owner, attempt) names one holder of the
lease for all time, and a write that checks it in its own transaction, against the locked row,
either commits before the takeover (the new attempt then reads it in the log) or not at all.
"""

from dataclasses import dataclass

from app.errors import LeaseLost


@dataclass(frozen=True)
class Fence:
    """The lease a run holds: what every one of its writes must still hold to commit."""

    invocation_id: str
    #: The process running the attempt (`InvocationManager.replica_id`).
    owner: str
    #: The invocation row's attempt when this process took the lease.
    attempt: int


def lease_lost(invocation_id: str, attempt: int) -> LeaseLost:
    """The error of a write refused because attempt `attempt` no longer holds the invocation."""
    return LeaseLost(
        f"Attempt {attempt} of invocation {invocation_id!r} no longer holds its lease: another "
        "attempt took it over, or it ended. Nothing was written."
    )


__all__ = ["Fence", "lease_lost"]
