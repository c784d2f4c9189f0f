"""An app as ADK declares it: `App` (root agent, plugins) and `ResumabilityConfig` (ADK's
import paths `app.apps` and `app.apps.app` re-export them)."""

from pydantic import BaseModel, ConfigDict, Field

from app.agents.base_agent import BaseAgent
from app.plugins.base_plugin import BasePlugin


class ResumabilityConfig(BaseModel):
    """ADK's resumability switch, accepted so ADK apps construct; it changes nothing here.

    agentd's Runner continues an invocation under its own id (a run without a new message)
    whether or not `is_resumable` is set.
    """

    is_resumable: bool = False


class App(BaseModel):
    """An app: a root agent plus runner-wide plugins (ADK's `App`)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    name: str
    root_agent: BaseAgent
    plugins: list[BasePlugin] = Field(default_factory=list)
    resumability_config: ResumabilityConfig | None = None


__all__ = ["App", "ResumabilityConfig"]
