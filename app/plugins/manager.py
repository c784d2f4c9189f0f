"""PluginManager: runs one hook over every plugin in order; the first non-None result wins."""

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from app.plugins.base_plugin import BasePlugin

if TYPE_CHECKING:
    from app.sessions.models import Event

logger = logging.getLogger(__name__)

#: Fields a plugin's replacement event never changes (ADK keeps the original's identity).
_EVENT_IDENTITY = frozenset({"id", "invocation_id", "timestamp"})


class PluginManager:
    """The runner's plugins."""

    def __init__(self, plugins: Sequence[BasePlugin] = ()) -> None:
        self.plugins: list[BasePlugin] = []
        for plugin in plugins:
            self.register_plugin(plugin)

    def register_plugin(self, plugin: BasePlugin) -> None:
        """Add `plugin` after the others; its name must be new."""
        if any(p.name == plugin.name for p in self.plugins):
            raise ValueError(f"Plugin names must be unique: {plugin.name!r} is registered twice.")
        self.plugins.append(plugin)

    def get_plugin(self, plugin_name: str) -> BasePlugin | None:
        """The plugin called `plugin_name`, if any."""
        return next((p for p in self.plugins if p.name == plugin_name), None)

    async def run(self, hook: str, **kwargs: Any) -> Any:
        """Call `hook` on each plugin; return the first non-None result."""
        for plugin in self.plugins:
            result = await getattr(plugin, hook)(**kwargs)
            if result is not None:
                return result
        return None

    async def notify(self, hook: str, **kwargs: Any) -> None:
        """Call an observe-only `hook` (the error hooks) on every plugin; see `notify_plugins`."""
        await notify_plugins(self.plugins, hook, **kwargs)

    async def close(self) -> None:
        """Close every plugin; a failing one is logged and the rest still close."""
        await notify_plugins(self.plugins, "close")


async def notify_plugins(plugins: Sequence[BasePlugin], hook: str, **kwargs: Any) -> None:
    """Call `hook` on every plugin, ignoring results.

    A plugin that raises is logged and skipped: the error hooks run while another error is on its
    way to the caller, and that error must be the one the caller sees (ADK's rule).
    """
    for plugin in plugins:
        try:
            await getattr(plugin, hook)(**kwargs)
        except Exception:
            logger.exception("Plugin %r failed in %s; ignored.", plugin.name, hook)


def merge_event(original: "Event", replacement: "Event | None") -> "Event":
    """The event to store and yield after `on_event_callback` returned `replacement`.

    As in ADK, only the fields the plugin set on its replacement override the original's, and the
    original keeps its id, invocation id and timestamp (and its author if the plugin gave none).
    """
    if replacement is None:
        return original
    update = {
        name: getattr(replacement, name)
        for name in replacement.model_fields_set
        if name not in _EVENT_IDENTITY
    }
    merged = original.model_copy(update=update)
    if not merged.author:
        merged.author = original.author
    return merged
