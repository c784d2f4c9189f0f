"""Running a compaction after an invocation: read the session, summarize the window that is
due, store one compaction event.

Best effort by design: the full history stays usable whatever happens here, so a summarizer
that raises or answers None, a session deleted meanwhile or a database that is away change
nothing but a warning in the log. The compaction event is appended blind (after whatever the
session holds now: the session's next invocation may be running) and without a fence (it is no
run's write); its range is by seq, so where it lands does not matter (`app.agents.compaction`).

Who calls it: the server's run tasks, in the background once an invocation completed
(`app.invocations.run_task`, one compaction per session at a time in a process), and the
in-process `Runner.run_async` at its end, as ADK's does.
"""

import logging
from collections.abc import Sequence

from app.agents.base_agent import BaseAgent
from app.agents.compaction import compaction_event, window_to_compact
from app.agents.llm_agent import LlmAgent
from app.errors import AgentdError
from app.invocations.app_config import App, EventsCompactionConfig
from app.invocations.summarizer import BaseEventsSummarizer, LlmEventSummarizer
from app.sessions.base import BaseSessionService
from app.sessions.models import Event

logger = logging.getLogger("agentd.compaction")


async def compact_session(
    app: App,
    session_service: BaseSessionService,
    *,
    app_name: str,
    user_id: str,
    session_id: str,
    after_invocation: str | None = None,
) -> Event | None:
    """Store the compaction the session is due for, if any; the stored event, else None.

    Args:
        after_invocation: the invocation that just ended: events after its last one (the
            next invocation's, running already) are not compacted by this call.
    """
    config = app.events_compaction_config
    if config is None or config.compaction_interval is None:
        return None
    try:
        session = await session_service.get_session(
            app_name=app_name, user_id=user_id, session_id=session_id
        )
        if session is None:
            return None
        up_to_seq = _last_seq_of(session.events, after_invocation) if after_invocation else None
        window = window_to_compact(
            session.events,
            interval=config.compaction_interval,
            overlap=config.overlap_size or 0,
            up_to_seq=up_to_seq,
        )
        if window is None:
            return None
        summarizer = _summarizer(config, app.root_agent)
        if summarizer is None:
            logger.warning("app %s compacts, but has no model to summarize with", app_name)
            return None
        summary = await summarizer.maybe_summarize_events(events=window.summarizer_input())
        if summary is None or summary.actions.compaction is None:
            logger.warning("compaction of session %s: the summarizer wrote nothing", session_id)
            return None
        return await session_service.append_event(
            session, compaction_event(window, summary), blind=True
        )
    except AgentdError as exc:
        logger.warning("compaction of session %s not stored: %s", session_id, exc.type)
    except Exception:
        logger.warning("compaction of session %s failed", session_id, exc_info=True)
    return None


def _last_seq_of(events: Sequence[Event], invocation_id: str) -> int | None:
    for event in reversed(events):
        if event.invocation_id == invocation_id and event.actions.compaction is None:
            return event.seq
    return None


def _summarizer(config: EventsCompactionConfig, root: BaseAgent) -> BaseEventsSummarizer | None:
    """The configured summarizer, else one with the model of the first LlmAgent from the root
    down (kept on the config, as ADK does, so its client is made once)."""
    if config.summarizer is None:
        agent = _first_llm_agent(root)
        if agent is None:
            return None
        config.summarizer = LlmEventSummarizer(agent.canonical_model)
    return config.summarizer


def _first_llm_agent(agent: BaseAgent) -> LlmAgent | None:
    if isinstance(agent, LlmAgent) and agent.model:
        return agent
    for child in agent.sub_agents:
        found = _first_llm_agent(child)
        if found is not None:
            return found
    return None


__all__ = ["compact_session"]
