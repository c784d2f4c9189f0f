"""PluginManager: runs one hook over every plugin in order; the first non-None result wins."""

from collections.abc import Sequence
from typing import Any

from app.plugins.base_plugin import BasePlugin


class PluginManager:
    """The runner's plugins."""

    def __init__(self, plugins: Sequence[BasePlugin] = ()) -> None:
        names = [p.name for p in plugins]
        if len(names) != len(set(names)):
            raise ValueError(f"Plugin names must be unique: {names}")
        self.plugins = list(plugins)

    async def run(self, hook: str, **kwargs: Any) -> Any:
        """Call `hook` on each plugin; return the first non-None result."""
        for plugin in self.plugins:
            result = await getattr(plugin, hook)(**kwargs)
            if result is not None:
                return result
        return None
