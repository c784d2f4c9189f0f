"""Callback dispatch: sync or async, single or list; the first non-None result wins."""

import inspect
from collections.abc import Callable, Sequence
from typing import Any

#: What an agent accepts for any callback slot.
CallbackSlot = Callable[..., Any] | Sequence[Callable[..., Any]] | None


def as_list(callbacks: CallbackSlot) -> list[Callable[..., Any]]:
    """The callbacks of a slot, in order."""
    if callbacks is None:
        return []
    if callable(callbacks):
        return [callbacks]
    return list(callbacks)


async def run_callbacks(callbacks: CallbackSlot, **kwargs: Any) -> Any:
    """Call each callback with `kwargs`; return the first non-None result (skipping the rest)."""
    for callback in as_list(callbacks):
        result = callback(**kwargs)
        if inspect.isawaitable(result):
            result = await result
        if result is not None:
            return result
    return None
