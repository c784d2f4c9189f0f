"""Small helpers for engine tests: run one turn, read texts, fail on purpose."""

from collections.abc import AsyncGenerator
from typing import Any

from google.genai import types
from pydantic import Field

from app.invocations.runner import Runner
from app.models.llm import BaseLlm, LlmRequest, LlmResponse
from app.sessions.models import Event


def user_message(text: str) -> types.Content:
    """A user turn."""
    return types.Content(role="user", parts=[types.Part(text=text)])


async def run_turn(
    runner: Runner, text: str, *, session_id: str = "s", user_id: str = "u", **kwargs: Any
) -> list[Event]:
    """All events of one invocation (the user event first)."""
    return [
        event
        async for event in runner.run_invocation(
            user_id=user_id, session_id=session_id, new_message=user_message(text), **kwargs
        )
    ]


def texts(events: list[Event]) -> list[str]:
    """The text of every event that has some, in order."""
    found = []
    for event in events:
        if event.content and event.content.parts:
            text = "".join(p.text or "" for p in event.content.parts)
            if text:
                found.append(text)
    return found


class FailingLlm(BaseLlm):
    """A model whose every call raises."""

    model: str = "failing"

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        """Raise instead of answering."""
        del llm_request, stream
        raise RuntimeError("model unavailable")
        yield  # pragma: no cover


def text_response(text: str) -> LlmResponse:
    """A final text answer."""
    return LlmResponse(content=types.Content(role="model", parts=[types.Part(text=text)]))


class ScriptModel(BaseLlm):
    """A model that plays back `replies` in order (then repeats the last) and records requests."""

    model: str = "script"
    replies: list[LlmResponse]
    requests: list[LlmRequest] = Field(default_factory=list)

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        """The next scripted reply."""
        del stream
        self.requests.append(llm_request)
        index = min(len(self.requests), len(self.replies)) - 1
        yield self.replies[index].model_copy(deep=True)


def calls_response(*calls: tuple[str, dict[str, Any]]) -> LlmResponse:
    """A model answer asking for one or more function calls."""
    return LlmResponse(
        content=types.Content(
            role="model",
            parts=[
                types.Part(function_call=types.FunctionCall(name=name, args=args))
                for name, args in calls
            ],
        )
    )


def request_texts(request: LlmRequest) -> list[str]:
    """Every text part of a model request's contents."""
    return [p.text for c in request.contents for p in c.parts or [] if p.text]
