"""Plugins: runner-wide callbacks that run before the agents' own."""

from app.plugins.base_plugin import BasePlugin
from app.plugins.logging_plugin import LoggingPlugin
from app.plugins.manager import PluginManager
from app.plugins.reflect_retry_tool_plugin import ReflectAndRetryToolPlugin

__all__ = ["BasePlugin", "LoggingPlugin", "PluginManager", "ReflectAndRetryToolPlugin"]
