"""ADK's `BaseAgentConfig`: what every agent config file has (name, description, sub-agents,
agent callbacks). Other keys are kept for the concrete agent class's config to judge."""

from pydantic import BaseModel, ConfigDict

from app.agents.common_configs import AgentRefConfig, CodeConfig


class BaseAgentConfig(BaseModel):
    """The keys every agent config has."""

    model_config = ConfigDict(extra="allow")

    agent_class: str = "BaseAgent"
    name: str
    description: str = ""
    sub_agents: list[AgentRefConfig] | None = None
    before_agent_callbacks: list[CodeConfig] | None = None
    after_agent_callbacks: list[CodeConfig] | None = None


__all__ = ["BaseAgentConfig"]
