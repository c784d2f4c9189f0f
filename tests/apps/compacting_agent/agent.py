"""A test app that compacts every 2 invocations with 1 invocation of overlap, with a recording
model and a scripted summarizer (no network).

The model answers `echo: <latest user text>` and appends each request's contents (JSON) to
`<AGENTD_TEST_GATES>/<session id>.requests.jsonl`. The summarizer answers
`S[<each input's text, " | "-joined>]` (so a summary shows what it was made from, an earlier
summary included); it appends the texts it read to `<AGENTD_TEST_GATES>/summaries.log` (one
JSON line per call) and raises when one of them says "explode".
"""

import json
import os
from collections.abc import AsyncGenerator
from pathlib import Path

from google.genai import types

from app.agents import LlmAgent
from app.agents.callback_context import CallbackContext
from app.apps import App, EventsCompactionConfig
from app.apps.base_events_summarizer import BaseEventsSummarizer, summary_event
from app.models.llm import BaseLlm, LlmRequest, LlmResponse
from app.sessions.models import Event

INTERVAL = 2
OVERLAP = 1


def _gate(session_id: str, suffix: str) -> Path:
    return Path(os.environ["AGENTD_TEST_GATES"]) / f"{session_id}.{suffix}"


class RecordingModel(BaseLlm):
    """Echoes the latest user text; records every request under its session's label."""

    model: str = "recording"

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        """Record the request, then echo."""
        del stream
        labels = (llm_request.config.labels if llm_request.config else None) or {}
        contents = [c.model_dump(mode="json", exclude_none=True) for c in llm_request.contents]
        with _gate(labels["session"], "requests.jsonl").open("a") as log:
            log.write(json.dumps(contents) + "\n")
        last = llm_request.contents[-1]
        text = "".join(p.text or "" for p in last.parts or ())
        yield LlmResponse(
            content=types.Content(role="model", parts=[types.Part(text=f"echo: {text}")])
        )


class ScriptedSummarizer(BaseEventsSummarizer):
    """Joins its inputs' texts; raises on "explode"."""

    async def maybe_summarize_events(self, *, events: list[Event]) -> Event | None:
        """One summary of `events`."""
        texts = [
            "".join(p.text or "" for p in e.content.parts or ())
            for e in events
            if e.content is not None
        ]
        with (Path(os.environ["AGENTD_TEST_GATES"]) / "summaries.log").open("a") as log:
            log.write(json.dumps(texts) + "\n")
        if any("explode" in text for text in texts):
            raise RuntimeError("the summarizer exploded")
        summary = types.Content(role="model", parts=[types.Part(text=f"S[{' | '.join(texts)}]")])
        return summary_event(events, summary)


def _label_session(callback_context: CallbackContext, llm_request: LlmRequest) -> None:
    if llm_request.config is not None:
        llm_request.config.labels = {"session": callback_context.session.id}


root_agent = LlmAgent(
    name="compacting_agent",
    model=RecordingModel(),
    instruction="Echo.",
    before_model_callback=_label_session,
)

app = App(
    name="compacting_agent",
    root_agent=root_agent,
    events_compaction_config=EventsCompactionConfig(
        compaction_interval=INTERVAL, overlap_size=OVERLAP, summarizer=ScriptedSummarizer()
    ),
)
