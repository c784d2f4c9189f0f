"""ADK's `LlmAgentConfig`: the YAML schema of an LlmAgent (`root_agent.yaml`).

The keys are LlmAgent's own, spelled as ADK's config spells them; callbacks are lists of code
references (`before_model_callbacks: [{name: my_app.callbacks.check}]`). A key LlmAgent does not
have is refused by name, so a typo fails at load time instead of being ignored.
"""

from typing import Literal

from google.genai import types
from pydantic import ConfigDict

from app.agents.base_agent_config import BaseAgentConfig
from app.agents.common_configs import CodeConfig
from app.tools.tool_configs import ToolConfig


class LlmAgentConfig(BaseAgentConfig):
    """The config of an LlmAgent."""

    model_config = ConfigDict(extra="forbid")

    agent_class: str = "LlmAgent"
    model: str | None = None
    model_code: CodeConfig | None = None
    instruction: str = ""
    global_instruction: str = ""
    #: Sent literally, never templated (LlmAgent.static_instruction); text in YAML.
    static_instruction: str | None = None
    #: Code references to the pydantic models (or types) of LlmAgent.input/output_schema.
    input_schema: CodeConfig | None = None
    output_schema: CodeConfig | None = None
    disallow_transfer_to_parent: bool = False
    disallow_transfer_to_peers: bool = False
    output_key: str | None = None
    include_contents: Literal["default", "none"] = "default"
    tools: list[ToolConfig] | None = None
    before_model_callbacks: list[CodeConfig] | None = None
    after_model_callbacks: list[CodeConfig] | None = None
    before_tool_callbacks: list[CodeConfig] | None = None
    after_tool_callbacks: list[CodeConfig] | None = None
    generate_content_config: types.GenerateContentConfig | None = None


__all__ = ["LlmAgentConfig"]
