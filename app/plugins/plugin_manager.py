"""ADK's module path for the PluginManager (`app.plugins.plugin_manager`)."""

from app.plugins.manager import PluginManager

__all__ = ["PluginManager"]
