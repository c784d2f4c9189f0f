"""How an agent config file names a tool: ADK's `ToolConfig` (`name` plus optional `args`).

`name` is a bare name for a built-in of `app.tools` (`exit_loop`, `load_memory`, `AgentTool`) or a
dotted `module.attr` for the app's own tools; `args` holds free key-value pairs for a tool class or
a tool-building function (`app.agents.config_agent_utils` resolves both).
"""

from typing import Any

from pydantic import BaseModel, ConfigDict


class BaseToolConfig(BaseModel):
    """The base class of a tool's own, typed config."""

    model_config = ConfigDict(extra="forbid")


class ToolArgsConfig(BaseModel):
    """Free key-value pairs: the `args` of a tool in an agent config."""

    model_config = ConfigDict(extra="allow")

    def as_kwargs(self) -> dict[str, Any]:
        """The pairs as keyword arguments."""
        return dict(self.model_extra or {})


class ToolConfig(BaseModel):
    """One entry of an agent config's `tools`."""

    model_config = ConfigDict(extra="forbid")

    name: str
    args: ToolArgsConfig | None = None


__all__ = ["BaseToolConfig", "ToolArgsConfig", "ToolConfig"]
