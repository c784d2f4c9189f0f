"""Benchmark app for bench/streams.py: a model that streams 20 chunks over 2 s.

The first chunk comes at once, then one every 100 ms, then the whole answer: a `/run_sse` with
`streaming: true` is 21 frames (20 partial events and the final one) and takes 2 s whatever the
server does, so what the bench measures above that floor is the server's own.
"""

import asyncio
from collections.abc import AsyncGenerator

from google.genai import types

from app.agents import LlmAgent
from app.models import BaseLlm, LlmRequest, LlmResponse

CHUNKS = 20
FLOOR_SECONDS = 2.0


class StreamingModel(BaseLlm):
    """20 partial chunks, 100 ms apart, then the aggregated answer."""

    model: str = "stream-bench-model"

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        """The chunks (when streaming), paced to the 2 s floor, then the answer."""
        del llm_request
        words = [f"w{index} " for index in range(CHUNKS)]
        for index, word in enumerate(words):
            if index:
                await asyncio.sleep(FLOOR_SECONDS / CHUNKS)
            if stream:
                yield LlmResponse(
                    content=types.Content(role="model", parts=[types.Part(text=word)]),
                    partial=True,
                )
        await asyncio.sleep(FLOOR_SECONDS / CHUNKS)
        text = "".join(words)
        yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text=text)]))


root_agent = LlmAgent(name="stream_bench", model=StreamingModel())
