"""Summarizers for compaction: ADK's port (`BaseEventsSummarizer`) and its LLM implementation.

ADK's import paths `app.apps.base_events_summarizer` and `app.apps.llm_event_summarizer`
re-export them. A summarizer gets the events to compact (the previous summary first, as an event
with content, when there is one) and returns an event whose `actions.compaction` holds the new
summary, or None when it has nothing to say; the compaction run (`app.invocations.compaction`)
sets the covered range, the author and the invocation id of what it stores.
"""

import abc
import json
from collections.abc import Sequence
from typing import Any

from google.genai import types

from app.models.llm import BaseLlm, LlmRequest
from app.sessions.client_calls import is_client_request_event
from app.sessions.models import Event, EventActions, EventCompaction, new_invocation_id


class BaseEventsSummarizer(abc.ABC):
    """Turns a run of events into one compaction event (ADK's port)."""

    @abc.abstractmethod
    async def maybe_summarize_events(self, *, events: list[Event]) -> Event | None:
        """The compaction event for `events`, or None to leave them as they are.

        Args:
            events: what to summarize, oldest first; the previous summary, when there is one,
                is the first (its `actions.compaction` is set and its `content` is the summary).
        """


_PROMPT = (
    "You keep the memory of a long conversation between a user and an AI agent. Write a "
    "summary that will replace the transcript below in the agent's context, so the agent can "
    "carry on as if it had read all of it.\n"
    "Keep: what the user asked for and still wants, facts and decisions established, results "
    "of tool calls that matter later (name the tools), and anything still open or promised. "
    "Drop small talk and anything superseded. If the transcript starts with an earlier "
    "summary, fold it in: your summary replaces both. Write in the user's language and say "
    "which language that is on the first line.\n\n"
    "Transcript:\n{transcript}"
)

#: Tool arguments and results can be long; the summary needs their gist, not their bulk.
_MAX_TOOL_TEXT = 2000


class LlmEventSummarizer(BaseEventsSummarizer):
    """Summarizes with a model (by default the app's root agent's)."""

    def __init__(self, llm: BaseLlm, prompt_template: str | None = None) -> None:
        """Args:
        prompt_template: the instruction, with a `{transcript}` placeholder (ADK's
            `{conversation_history}` is accepted too).
        """
        self._llm = llm
        self._prompt = prompt_template or _PROMPT

    async def maybe_summarize_events(self, *, events: list[Event]) -> Event | None:
        """Ask the model for one summary of `events`; None if it answers no content."""
        if not events:
            return None
        transcript = transcript_of(events)
        prompt = self._prompt.replace("{transcript}", transcript).replace(
            "{conversation_history}", transcript
        )
        request = LlmRequest(
            model=self._llm.model,
            contents=[types.Content(role="user", parts=[types.Part(text=prompt)])],
        )
        answer = None
        async for response in self._llm.generate_content_async(request, stream=False):
            if response.partial:
                continue
            if response.content is not None and response.content.parts:
                answer = response
                break
        if answer is None or answer.content is None:
            return None
        parts = [p for p in answer.content.parts or () if p.text and not p.thought]
        if not parts:
            return None
        return summary_event(
            events, types.Content(role="model", parts=parts), usage_metadata=answer.usage_metadata
        )


def summary_event(
    events: Sequence[Event],
    summary: types.Content,
    *,
    usage_metadata: types.GenerateContentResponseUsageMetadata | None = None,
) -> Event:
    """What a summarizer returns for `events` (at least one): an event whose `actions.compaction`
    holds `summary` over their time range, as ADK's summarizers write it. agentd stores its own
    event from it (range, author and id its own: `app.agents.compaction.compaction_event`)."""
    return Event(
        author="user",
        invocation_id=new_invocation_id(),
        actions=EventActions(
            compaction=EventCompaction(
                start_timestamp=events[0].timestamp,
                end_timestamp=events[-1].timestamp,
                compacted_content=summary,
            )
        ),
        usage_metadata=usage_metadata,
    )


def transcript_of(events: Sequence[Event]) -> str:
    """`events` as plain lines: who said what, which tools were called and what they returned.
    The framework's credential and confirmation requests carry no conversation (and may carry
    secrets): left out."""
    lines: list[str] = []
    for event in events:
        if event.content is None or not event.content.parts or is_client_request_event(event):
            continue
        if event.actions.compaction is not None:
            text = "".join(p.text or "" for p in event.content.parts if not p.thought)
            lines.append(f"[summary of the conversation before] {text}")
            continue
        for part in event.content.parts:
            if part.text and not part.thought:
                lines.append(f"{event.author}: {part.text}")
            if part.function_call is not None:
                args = _clipped(part.function_call.args)
                lines.append(f"{event.author} called {part.function_call.name}({args})")
            if part.function_response is not None:
                result = _clipped(part.function_response.response)
                lines.append(f"{part.function_response.name} returned {result}")
    return "\n".join(lines)


def _clipped(value: Any) -> str:
    text = json.dumps(value, default=str, ensure_ascii=False) if value is not None else ""
    if len(text) <= _MAX_TOOL_TEXT:
        return text
    return f"{text[:_MAX_TOOL_TEXT]}... ({len(text) - _MAX_TOOL_TEXT} more characters)"


__all__ = ["BaseEventsSummarizer", "LlmEventSummarizer", "transcript_of"]
