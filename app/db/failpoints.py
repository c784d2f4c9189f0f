"""Failpoints: faults a test injects at a named point of a real server (AGENTD_FAILPOINTS).

Some faults cannot be produced on demand from outside a process at the exact moment that
matters: "the database committed, and the reply never came back" is one. A failpoint makes the
server behave, at one named point, as if that fault had happened, while everything else (the
database, HTTP, the other processes) stays real. The idea is etcd's gofail and TiKV's fail-rs;
the list is empty unless the setting names one, so production pays one dict lookup per write.

Spelling: `AGENTD_FAILPOINTS="commit-reply-lost:create*1,commit-reply-lost:finish"`, a comma
separated list of `<point>:<unit operation>[*<times>]` (without `*`, every time). Points:

- `commit-reply-lost`: after a write unit of that operation committed, the unit fails as if
  the connection dropped before the commit's reply arrived (`OutcomeUnknown`).
"""

import threading

#: The points a setting may name.
POINTS = frozenset({"commit-reply-lost"})

_armed: dict[tuple[str, str], int | None] = {}
_lock = threading.Lock()


def configure(spec: str) -> None:
    """Arm the failpoints `spec` names (replacing any armed before); ValueError if malformed."""
    armed: dict[tuple[str, str], int | None] = {}
    for item in filter(None, (part.strip() for part in spec.split(","))):
        point, _, rest = item.partition(":")
        operation, _, times = rest.partition("*")
        if point not in POINTS or not operation:
            raise ValueError(f"Unknown failpoint {item!r}: expected <point>:<operation>[*<n>]")
        armed[(point, operation)] = int(times) if times else None
    with _lock:
        _armed.clear()
        _armed.update(armed)


def fires(point: str, operation: str) -> bool:
    """Whether the failpoint fires now (counting it down if it has a count)."""
    if not _armed:
        return False
    with _lock:
        key = (point, operation)
        if key not in _armed:
            return False
        left = _armed[key]
        if left is not None:
            if left <= 0:
                return False
            _armed[key] = left - 1
        return True


__all__ = ["POINTS", "configure", "fires"]
