"""State scopes and the delta-aware `State` view.

A key's prefix says where it lives: `app:` (every user of the app), `user:` (every session of one
user in one app), `temp:` (the current invocation only; never persisted, never returned) and no
prefix (the session itself). Storage keeps keys without their prefix; reads merge the scopes back
into one dict with prefixes.
"""

from collections.abc import Iterator, Mapping, MutableMapping
from dataclasses import dataclass, field
from typing import Any


class State(MutableMapping[str, Any]):
    """A state dict whose writes are also recorded in a delta (read-delta-first)."""

    APP_PREFIX = "app:"
    USER_PREFIX = "user:"
    TEMP_PREFIX = "temp:"

    def __init__(self, value: MutableMapping[str, Any], delta: MutableMapping[str, Any]) -> None:
        self._value = value
        self._delta = delta

    def __getitem__(self, key: str) -> Any:
        if key in self._delta:
            return self._delta[key]
        return self._value[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self._value[key] = value
        self._delta[key] = value

    def __delitem__(self, key: str) -> None:
        # A delta cannot express removal portably (ADK has no tombstones); store None instead.
        self[key] = None

    def __contains__(self, key: object) -> bool:
        return key in self._delta or key in self._value

    def __iter__(self) -> Iterator[str]:
        yield from self._value
        yield from (k for k in self._delta if k not in self._value)

    def __len__(self) -> int:
        return len(self._value.keys() | self._delta.keys())

    def has_delta(self) -> bool:
        """Whether anything was written through this view."""
        return bool(self._delta)

    def to_dict(self) -> dict[str, Any]:
        """The merged view as a plain dict."""
        return {**self._value, **self._delta}


@dataclass
class ScopedDelta:
    """A state delta split by scope, keys stripped of their prefix (temp keys keep theirs)."""

    app: dict[str, Any] = field(default_factory=dict)
    user: dict[str, Any] = field(default_factory=dict)
    session: dict[str, Any] = field(default_factory=dict)
    temp: dict[str, Any] = field(default_factory=dict)


def split_delta(delta: Mapping[str, Any]) -> ScopedDelta:
    """Split a prefixed delta into its scopes."""
    scoped = ScopedDelta()
    for key, value in delta.items():
        if key.startswith(State.APP_PREFIX):
            scoped.app[key.removeprefix(State.APP_PREFIX)] = value
        elif key.startswith(State.USER_PREFIX):
            scoped.user[key.removeprefix(State.USER_PREFIX)] = value
        elif key.startswith(State.TEMP_PREFIX):
            scoped.temp[key] = value
        else:
            scoped.session[key] = value
    return scoped


def persistable_delta(delta: Mapping[str, Any]) -> dict[str, Any]:
    """The delta without `temp:` keys: what an event may carry into storage."""
    return {k: v for k, v in delta.items() if not k.startswith(State.TEMP_PREFIX)}


def merge_state(
    session_state: Mapping[str, Any],
    app_state: Mapping[str, Any],
    user_state: Mapping[str, Any],
) -> dict[str, Any]:
    """The merged, prefixed view a reader sees."""
    merged = dict(session_state)
    merged.update({State.APP_PREFIX + k: v for k, v in app_state.items()})
    merged.update({State.USER_PREFIX + k: v for k, v in user_state.items()})
    return merged
