"""Callback dispatch: plugins first, then the agent's callbacks; the first non-None result wins.

Every hook that both plugins and agents offer (before/after agent, model and tool, and the model
and tool error hooks) goes through `dispatch`, so the order and the short-circuit are the same at
every site. An agent's slot may hold one callback or a list, each sync or async.
"""

import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from app.contexts.invocation import PluginRunner

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


async def dispatch(
    plugins: PluginRunner,
    hook: str,
    slot: CallbackSlot,
    *,
    plugin_kwargs: Mapping[str, Any],
    callback_kwargs: Mapping[str, Any] | None = None,
) -> Any:
    """Run `hook` on the plugins, then the agent's `slot` if no plugin answered (ADK's order).

    Args:
        plugins: the invocation's plugins; their `hook` method gets `plugin_kwargs`.
        hook: the hook's name, e.g. "before_tool_callback".
        slot: the agent's callbacks for that hook.
        plugin_kwargs: the plugins' keyword arguments.
        callback_kwargs: the agent callbacks' keyword arguments, where ADK names them differently
            from the plugins' (tool hooks: `args`, not `tool_args`); default `plugin_kwargs`.
    """
    result = await plugins.run(hook, **plugin_kwargs)
    if result is not None:
        return result
    kwargs = plugin_kwargs if callback_kwargs is None else callback_kwargs
    return await run_callbacks(slot, **kwargs)
