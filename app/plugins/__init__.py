"""Plugins: runner-wide callbacks that run before the agents' own."""

from app.plugins.base_plugin import BasePlugin
from app.plugins.manager import PluginManager

__all__ = ["BasePlugin", "PluginManager"]
