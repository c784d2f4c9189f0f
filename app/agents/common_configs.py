"""Config shapes several agent configs share (ADK's `common_configs`): code and agent references."""

from typing import Any

from pydantic import BaseModel, ConfigDict, model_validator


class ArgumentConfig(BaseModel):
    """An argument for a referenced callable: keyword if it has a `name`, else positional."""

    model_config = ConfigDict(extra="forbid")

    name: str | None = None
    value: Any


class CodeConfig(BaseModel):
    """A reference to Python code by dotted name (`my_app.callbacks.log_call`), with `args`
    to call it with when given."""

    model_config = ConfigDict(extra="forbid")

    name: str
    args: list[ArgumentConfig] | None = None


class AgentRefConfig(BaseModel):
    """A sub-agent: another config file (`config_path`, relative to this one) or `code`."""

    model_config = ConfigDict(extra="forbid")

    config_path: str | None = None
    code: str | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> "AgentRefConfig":
        if (self.config_path is None) == (self.code is None):
            raise ValueError("an agent reference needs exactly one of config_path or code")
        return self


__all__ = ["AgentRefConfig", "ArgumentConfig", "CodeConfig"]
