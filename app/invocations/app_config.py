"""An app as ADK declares it: `App` (root agent, plugins), `ResumabilityConfig` and
`EventsCompactionConfig` (ADK's import paths `app.apps` and `app.apps.app` re-export them)."""

from pydantic import BaseModel, ConfigDict, Field, model_validator

from app.agents.base_agent import BaseAgent
from app.invocations.summarizer import BaseEventsSummarizer
from app.plugins.base_plugin import BasePlugin


class ResumabilityConfig(BaseModel):
    """ADK's resumability switch, accepted so ADK apps construct; it changes nothing here.

    agentd's Runner continues an invocation under its own id (a run without a new message)
    whether or not `is_resumable` is set.
    """

    is_resumable: bool = False


class EventsCompactionConfig(BaseModel):
    """When a session's history is summarized (ADK's sliding-window compaction).

    Every `compaction_interval` invocations, once `overlap_size` more followed, the summarizer
    (default: an `LlmEventSummarizer` with the root agent's model) writes one compaction event
    covering everything before the last `overlap_size` invocations, the previous summary
    included; model requests then carry that summary, those invocations and what follows.

    ADK's other trigger, the `token_threshold` / `event_retention_size` pair, is validated as
    ADK does and then refused: agentd does not compact on a token count (a run's
    `max_context_tokens` bounds the request instead).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    summarizer: BaseEventsSummarizer | None = None
    compaction_interval: int | None = Field(default=None, gt=0)
    overlap_size: int | None = Field(default=None, ge=0)
    token_threshold: int | None = Field(default=None, gt=0)
    event_retention_size: int | None = Field(default=None, ge=0)

    @model_validator(mode="after")
    def _check_triggers(self) -> "EventsCompactionConfig":
        if (self.token_threshold is None) != (self.event_retention_size is None):
            raise ValueError("token_threshold and event_retention_size must be set together.")
        if (self.compaction_interval is None) != (self.overlap_size is None):
            raise ValueError("compaction_interval and overlap_size must be set together.")
        if self.token_threshold is not None:
            raise ValueError(
                "agentd does not compact on a token threshold (token_threshold, "
                "event_retention_size): set compaction_interval and overlap_size, and bound "
                "each request with RunConfig.max_context_tokens."
            )
        if self.compaction_interval is None:
            raise ValueError("Set compaction_interval and overlap_size.")
        return self


class App(BaseModel):
    """An app: a root agent plus runner-wide plugins (ADK's `App`)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    name: str
    root_agent: BaseAgent
    plugins: list[BasePlugin] = Field(default_factory=list)
    resumability_config: ResumabilityConfig | None = None
    events_compaction_config: EventsCompactionConfig | None = None


__all__ = ["App", "EventsCompactionConfig", "ResumabilityConfig"]
