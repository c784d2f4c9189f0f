"""The Gemini backend: `gemini-*` and Vertex model paths, answered through google-genai.

google-genai is Google's own client for both the Gemini API and Vertex AI: it owns
authentication (API key or application default credentials), the Vertex environment
(`GOOGLE_GENAI_USE_VERTEXAI`, `GOOGLE_CLOUD_PROJECT`, ...), the REST wire format and SSE
streaming, and its types are the ones `LlmRequest` / `LlmResponse` already carry. This
module only adapts it to the model port: it builds the client lazily (so an agent can be
defined without a key), drops empty tool entries, and folds a stream into ADK-style
partial chunks plus one final response. API errors (`google.genai.errors.APIError`)
propagate unchanged so the engine can hand them to `on_model_error_callback`.

Missing credentials are the exception: google-genai says "No API key was provided" (a bare
ValueError) and google-auth raises `DefaultCredentialsError` on Vertex AI, which reached clients
as a 500. Both become `ModelNotConfigured` (503 `model-not-configured`), naming the variables to
set for the mode the client is in (Gemini API or Vertex AI, as `GOOGLE_GENAI_USE_VERTEXAI` says).
"""

import os
from collections.abc import AsyncGenerator, Sequence

from google import genai
from google.auth.exceptions import DefaultCredentialsError
from google.genai import types
from pydantic import PrivateAttr

from app.errors import ModelNotConfigured
from app.models.llm import BaseLlm, LlmRequest, LlmResponse

BASE_URL_ENV = "AGENTD_GEMINI_BASE_URL"

# Fields a part may carry and still count as plain text (streamed as a partial chunk).
_TEXT_FIELDS = frozenset({"text", "thought", "thought_signature"})


class Gemini(BaseLlm):
    """Gemini models through the google-genai client (Gemini API or Vertex AI)."""

    base_url: str | None = None
    api_key: str | None = None

    _client: genai.Client | None = PrivateAttr(default=None)

    @classmethod
    def supported_models(cls) -> list[str]:
        """Regexes of the model names this backend serves."""
        return [
            r"gemini-.*",
            r"projects/.+/locations/.+/endpoints/.+",
            r"projects/.+/locations/.+/publishers/google/models/gemini.+",
        ]

    @property
    def api_client(self) -> genai.Client:
        """The google-genai client, created on first use and kept for this instance."""
        if self._client is None:
            base_url = self.base_url or os.environ.get(BASE_URL_ENV) or None
            http_options = types.HttpOptions(base_url=base_url) if base_url else None
            # api_key None lets the client read GOOGLE_API_KEY / GEMINI_API_KEY or Vertex env.
            try:
                self._client = genai.Client(api_key=self.api_key, http_options=http_options)
            except (ValueError, DefaultCredentialsError) as exc:
                # Every ValueError of the constructor is a missing or contradictory setting.
                raise not_configured(self.model, exc) from exc
        return self._client

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        """Answer `llm_request`: one final response, or partial text chunks then a final one."""
        model = llm_request.model or self.model
        config = _outgoing_config(llm_request.config)
        models = self.api_client.aio.models
        try:
            if not stream:
                response = await models.generate_content(
                    model=model, contents=llm_request.contents, config=config
                )
                yield LlmResponse.create(response)
                return

            chunks = await models.generate_content_stream(
                model=model, contents=llm_request.contents, config=config
            )
        except DefaultCredentialsError as exc:
            # Vertex AI with a project but no application default credentials: found out
            # when the first request needs a token.
            raise not_configured(model, exc) from exc
        aggregator = _StreamAggregator()
        async for chunk in chunks:
            if chunk.prompt_feedback and chunk.prompt_feedback.block_reason:
                # The prompt was blocked: this is the whole answer.
                yield LlmResponse.create(chunk)
                return
            partial = aggregator.add(chunk)
            if partial is not None:
                yield partial
        yield aggregator.final()

    async def aclose(self) -> None:
        """Release the client's HTTP connections (a later call opens new ones)."""
        if self._client is None:
            return
        client, self._client = self._client, None
        await client.aio.aclose()
        client.close()


def uses_vertex_ai() -> bool:
    """Whether google-genai picks Vertex AI from the environment (as its Client decides)."""
    for name in ("GOOGLE_GENAI_USE_ENTERPRISE", "GOOGLE_GENAI_USE_VERTEXAI"):
        value = os.environ.get(name)
        if value is not None:
            return value.lower() in ("true", "1")
    return False


def not_configured(model: str, cause: Exception) -> ModelNotConfigured:
    """The problem for a Gemini client that cannot authenticate, naming what to set."""
    if uses_vertex_ai():
        provider = "vertex_ai"
        variables = [
            "GOOGLE_CLOUD_PROJECT",
            "GOOGLE_CLOUD_LOCATION",
            "GOOGLE_APPLICATION_CREDENTIALS",
            "GOOGLE_API_KEY",
        ]
        detail = (
            f"{model} on Vertex AI (GOOGLE_GENAI_USE_VERTEXAI is on) has no credentials: set "
            "GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION with application default "
            "credentials (GOOGLE_APPLICATION_CREDENTIALS, or `gcloud auth application-default "
            "login`), or GOOGLE_API_KEY for Vertex AI express mode; then restart agentd. "
            f"({cause})"
        )
    else:
        provider = "gemini"
        variables = ["GOOGLE_API_KEY", "GEMINI_API_KEY"]
        detail = (
            f"{model} needs a Gemini API key: set GOOGLE_API_KEY (or GEMINI_API_KEY) in "
            "agentd's environment and restart it, or set GOOGLE_GENAI_USE_VERTEXAI=true with "
            "GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION to use Vertex AI."
        )
    return ModelNotConfigured(detail, provider=provider, model=model, variables=variables)


def _outgoing_config(config: types.GenerateContentConfig) -> types.GenerateContentConfig:
    """`config` without empty tool entries (the API rejects a tool that declares nothing)."""
    if not config.tools:
        return config
    tools = [t for t in config.tools if not isinstance(t, types.Tool) or _declares_something(t)]
    if len(tools) == len(config.tools):
        return config
    return config.model_copy(update={"tools": tools or None})


def _declares_something(tool: types.Tool) -> bool:
    return any(tool.model_dump(exclude_none=True).values())


def _is_text(part: types.Part) -> bool:
    return part.text is not None and set(part.model_dump(exclude_none=True)) <= _TEXT_FIELDS


def _merge_text(parts: Sequence[types.Part]) -> list[types.Part]:
    """Consecutive text parts (same `thought` flag) joined into one; other parts kept in order."""
    merged: list[types.Part] = []
    for part in parts:
        if not _is_text(part):
            merged.append(part)
            continue
        if not part.text and not part.thought_signature:
            continue
        previous = merged[-1] if merged else None
        if previous is not None and _is_text(previous) and previous.thought == part.thought:
            merged[-1] = previous.model_copy(
                update={
                    "text": (previous.text or "") + (part.text or ""),
                    "thought_signature": previous.thought_signature or part.thought_signature,
                }
            )
        else:
            merged.append(part.model_copy())
    return merged


class _StreamAggregator:
    """Folds stream chunks into partial text responses and one final response."""

    def __init__(self) -> None:
        self.received = False
        self.parts: list[types.Part] = []
        self.finish_reason: types.FinishReason | None = None
        self.finish_message: str | None = None
        self.grounding: types.GroundingMetadata | None = None
        self.usage: types.GenerateContentResponseUsageMetadata | None = None
        self.model_version: str | None = None

    def add(self, chunk: types.GenerateContentResponse) -> LlmResponse | None:
        """Take in one chunk; the partial response to yield when it is text only."""
        self.received = True
        self.usage = chunk.usage_metadata or self.usage
        self.model_version = chunk.model_version or self.model_version
        candidate = chunk.candidates[0] if chunk.candidates else None
        if candidate is None:
            return None
        self.finish_reason = candidate.finish_reason or self.finish_reason
        self.finish_message = candidate.finish_message or self.finish_message
        self.grounding = candidate.grounding_metadata or self.grounding
        parts = list(candidate.content.parts or []) if candidate.content else []
        self.parts.extend(parts)
        if not parts or not all(_is_text(p) for p in parts) or not any(p.text for p in parts):
            return None
        return LlmResponse(
            content=types.Content(role="model", parts=parts),
            partial=True,
            usage_metadata=chunk.usage_metadata,
            model_version=chunk.model_version,
        )

    def final(self) -> LlmResponse:
        """The end of the stream: all text as one part plus function calls, or an error."""
        if not self.received:
            return LlmResponse(
                error_code="EMPTY_RESPONSE",
                error_message="The model returned an empty stream.",
                turn_complete=True,
            )
        parts = _merge_text(self.parts)
        if not parts:
            reason = self.finish_reason
            return LlmResponse(
                error_code=str(reason.value) if reason else "EMPTY_RESPONSE",
                error_message=self.finish_message or "The model returned no content.",
                finish_reason=reason,
                turn_complete=True,
                usage_metadata=self.usage,
                model_version=self.model_version,
            )
        return LlmResponse(
            content=types.Content(role="model", parts=parts),
            grounding_metadata=self.grounding,
            partial=False,
            turn_complete=True,
            finish_reason=self.finish_reason,
            usage_metadata=self.usage,
            model_version=self.model_version,
        )
