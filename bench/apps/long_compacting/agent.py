"""long_compacting: long_plain's agent in an App that compacts every 20 invocations (overlap 1).

The summarizer is offline and returns the same short summary whatever it covers, so the
request's size after compaction depends only on the compaction, never on the summary's growth.
"""

import sys
from pathlib import Path

from google.genai import types

from app.apps import base_events_summarizer
from app.apps.app import App, EventsCompactionConfig
from app.sessions.models import Event

# The agent and model are long_plain's (one definition for both variants).
sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from app.agents import LlmAgent
from bench.apps.long_plain.agent import SizeReportingModel, get_capital_city

SUMMARY = "Earlier, the user asked for the capitals of several countries and got each one."


class FixedSummarizer(base_events_summarizer.BaseEventsSummarizer):
    """A compaction event in ADK's shape with a fixed one-sentence summary."""

    async def maybe_summarize_events(self, *, events: list[Event]) -> Event | None:
        """The summary of `events` (None when there is nothing to cover)."""
        if not events:
            return None
        summary = types.Content(role="model", parts=[types.Part(text=SUMMARY)])
        return base_events_summarizer.summary_event(events, summary)


app = App(
    name="long_compacting",
    root_agent=LlmAgent(
        name="long_compacting",
        model=SizeReportingModel(),
        instruction="You answer questions about capital cities. Use the get_capital_city tool.",
        tools=[get_capital_city],
    ),
    events_compaction_config=EventsCompactionConfig(
        compaction_interval=20, overlap_size=1, summarizer=FixedSummarizer()
    ),
)
