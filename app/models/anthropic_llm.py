"""The Anthropic backend: Claude models through the Messages API and the official `anthropic` SDK.

`Claude` serves `anthropic/<model>` and `claude-*` names (the `anthropic/` routing prefix is
stripped before the name reaches the API). The SDK owns authentication (`api_key`, else
`ANTHROPIC_API_KEY` / `ANTHROPIC_AUTH_TOKEN` / its credential profiles), the endpoint
(`base_url`, else `ANTHROPIC_BASE_URL`), the wire format, SSE parsing and retries: a field left
None here leaves the SDK to its own environment variables, so nothing agentd-specific is needed.
With no credential at all, a call fails before it is sent with `ModelNotConfigured` (503
`model-not-configured`) naming `ANTHROPIC_API_KEY`, where the SDK would raise a bare TypeError.

Retries are the SDK's: `max_retries` (default 2) bounded attempts on 408, 409, 429, 5xx (529
overloaded included) and connection errors, waiting what `retry-after-ms` / `retry-after` says
when the server sends a positive value (`retry-after: 0` counts as none), else exponential
backoff from 0.5 s (capped at 8 s) with jitter. Only after those are spent does an SDK
exception reach this module, which raises the typed `ModelError` the engine,
`on_model_error_callback` and `FallbackModel` expect:
`ModelRateLimited` (429), `ModelUnavailable` (5xx, overloaded, timeouts, connection errors) or
`ModelRequestRejected` (any other 4xx), each `from` the SDK's exception. An `error` event
inside a stream (HTTP 200) is typed by its error type (`overloaded_error` -> unavailable), and
a stream whose connection breaks off (an `httpx2` transport error, which the SDK does not wrap
once the stream is being read) is `ModelUnavailable`.

What is mapped (LlmRequest -> Messages request):
- the system instruction -> `system`; user text -> text blocks; user inline images (jpeg, png,
  gif, webp) -> base64 `image` blocks and image `file_data` URLs -> `url` image blocks; model
  text -> assistant text blocks; function calls -> assistant `tool_use` blocks (id = the call's
  id); function responses -> `tool_result` blocks (JSON text, `is_error` when the response is
  only an `error`) in a user message. Consecutive same-role contents are merged (the API wants
  user and assistant to alternate) with tool results first, as the API requires. Thought parts
  are not sent. Code a code executor ran and its result are sent as text. Any other part
  (audio, video, documents, images in model turns) fails the request with
  `ModelRequestRejected` rather than being dropped silently.
- function declarations -> `tools` (`input_schema` from `tool_schemas`); the function calling
  mode -> `tool_choice` (AUTO -> auto, ANY -> any, or `tool` for a single allowed name, with
  the tools narrowed to the allowed names; NONE -> none).
- `max_output_tokens` (else `max_tokens`, which the API requires), `stop_sequences`. A
  non-streaming call over 21,333 tokens, which the SDK refuses to send without streaming
  under its default timeout, is streamed and answered with its final response only.
- a response schema -> `output_config.format` (structured outputs, `json_schema`), through the
  SDK's `transform_schema` so the schema is one the API accepts. Structured outputs combine
  with tools, hence `capabilities.output_schema_with_tools`.

Not mapped:
- `temperature`, `top_p`, `top_k`: SDK 2.x sends API version 2026-10-21, which rejects them
  (HTTP 400, even at their defaults), and the SDK has no parameters for them. They are sent
  (as extra body fields) only when `extra_headers` pins `anthropic-version: 2023-06-01`, the
  version that still takes them; otherwise they are dropped with a warning.
- `thinking_config` (Anthropic's `thinking`): thought blocks are not sent back, and the API
  needs them, signed, in a tool loop with thinking on. Thinking blocks in answers are read.
- `response_mime_type` without a schema (the Messages API has no bare JSON mode), candidate
  count, seeds, penalties, safety settings, cached contents.

Answers (Message -> LlmResponse): text -> Part(text); `tool_use` -> Part(function_call) with
the block's id; `thinking` -> Part(text, thought=True); usage -> usage metadata (prompt tokens
include cache reads and writes); `stop_reason` -> finish reason; `model` -> `model_version`.
Streaming yields a partial response per text (and thinking) delta; tool input arrives as JSON
deltas that the SDK's stream helper assembles, so calls appear only in the final response.
"""

import asyncio
import base64
import json
import logging
from collections.abc import AsyncGenerator
from typing import Any

import anthropic
import httpx2
from anthropic import (
    AsyncAnthropic,
    AsyncAnthropicBedrock,
    AsyncAnthropicVertex,
    not_given,
    transform_schema,
)
from anthropic.types import Message
from google.genai import types
from pydantic import Field, PrivateAttr

from app.errors import (
    ModelError,
    ModelNotConfigured,
    ModelRateLimited,
    ModelRequestRejected,
    ModelUnavailable,
)
from app.models import tool_schemas
from app.models.llm import BaseLlm, LlmCapabilities, LlmRequest, LlmResponse

__all__ = ["AnthropicLlm", "Claude"]

logger = logging.getLogger(__name__)

PROVIDER = "anthropic"
_PREFIX = "anthropic/"

#: The API version that still accepts sampling parameters (see the module docstring).
SAMPLING_API_VERSION = "2023-06-01"

#: The largest `max_tokens` the SDK lets a non-streaming call ask for with its default timeout
#: (it expects 128,000 tokens an hour and refuses what may take over 10 minutes).
_NONSTREAMING_MAX = 21_333

#: Image media types the Messages API takes in a base64 image block.
_IMAGE_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})

_FINISH_REASONS: dict[str, types.FinishReason] = {
    "end_turn": types.FinishReason.STOP,
    "tool_use": types.FinishReason.STOP,
    "stop_sequence": types.FinishReason.STOP,
    "max_tokens": types.FinishReason.MAX_TOKENS,
    "refusal": types.FinishReason.SAFETY,
}

#: Error types of the API's error body that mean "the provider failed, try again later".
_UNAVAILABLE_TYPES = frozenset({"api_error", "overloaded_error", "timeout_error"})


class Claude(BaseLlm):
    """Claude models through Anthropic's Messages API (the official `anthropic` SDK).

    None leaves a setting to the SDK and its environment variables (`ANTHROPIC_API_KEY`,
    `ANTHROPIC_BASE_URL`); `extra_headers` are sent with every request (a gateway's headers,
    or a pinned `anthropic-version`). `max_tokens` is the answer budget the API requires,
    overridden per request by `generate_content_config.max_output_tokens`.
    """

    api_key: str | None = None
    base_url: str | None = None
    extra_headers: dict[str, str] | None = None
    max_retries: int = 2
    timeout: float | None = None
    max_tokens: int = 8192
    #: A client of your own (ADK's `client` field), e.g. `AsyncAnthropicVertex` or
    #: `AsyncAnthropicBedrock`: used as given (the connection fields above are then unused)
    #: and left open by `aclose`, since its owner closes it.
    client: AsyncAnthropic | AsyncAnthropicVertex | AsyncAnthropicBedrock | None = Field(
        default=None, exclude=True
    )

    _client: AsyncAnthropic | None = PrivateAttr(default=None)
    #: The event loop the created client's connections belong to (see `api_client`).
    _client_loop: asyncio.AbstractEventLoop | None = PrivateAttr(default=None)
    _warned_sampling: bool = PrivateAttr(default=False)

    @classmethod
    def supported_models(cls) -> list[str]:
        """Regexes of the model names this backend serves."""
        return [r"anthropic/.+", r"claude-.*"]

    @property
    def capabilities(self) -> LlmCapabilities:
        """Structured outputs work alongside tools on the Messages API."""
        return LlmCapabilities(output_schema_with_tools=True)

    @property
    def provider_model(self) -> str:
        """The model name as the API knows it (without the `anthropic/` routing prefix)."""
        return _provider_model(self.model)

    @property
    def api_client(self) -> AsyncAnthropic | AsyncAnthropicVertex | AsyncAnthropicBedrock:
        """The SDK client: `client`, else one created on first use (no key needed before).

        A created client's pooled connections belong to the event loop that opened them;
        scripts (and ADK's examples) call `asyncio.run` once per turn, so a new loop gets a
        new client.
        """
        if self.client is not None:
            return self.client
        try:
            loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:  # outside a loop (inspecting the configuration)
            loop = self._client_loop
        if self._client is None or self._client_loop is not loop:
            self._client_loop = loop
            self._client = AsyncAnthropic(
                api_key=self.api_key,
                base_url=self.base_url,
                default_headers=self.extra_headers,
                max_retries=self.max_retries,
                # None would mean "no timeout" to the SDK; unset keeps its default (10 min).
                timeout=self.timeout if self.timeout is not None else not_given,
            )
        return self._client

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        """Answer `llm_request`: one final response, or partial text chunks then a final one.

        A stream runs inside the SDK's stream context manager: when the consumer stops early
        (the generator is closed or its task cancelled) the context exits and the SDK closes
        the HTTP response, which drops the connection to the provider.
        """
        model = _provider_model(llm_request.model or self.model)
        params = self._params(llm_request, model)
        # The SDK refuses a non-streaming call that may outlast its 10-minute default timeout
        # (it raises ValueError before sending): such a call is streamed, and only its final
        # response is yielded. A `timeout` of our own turns the SDK's check off.
        quietly = not stream and self.timeout is None and params["max_tokens"] > _NONSTREAMING_MAX
        self._check_credentials(model)
        try:
            if not stream and not quietly:
                message = await self.api_client.messages.create(**params)
                yield _to_response(message)
                return
            async with self.api_client.messages.stream(**params) as events:
                async for event in events:
                    if quietly:
                        continue
                    if event.type == "text" and event.text:
                        yield _partial(types.Part(text=event.text))
                    elif event.type == "thinking" and event.thinking:
                        yield _partial(types.Part(text=event.thinking, thought=True))
                final = await events.get_final_message()
        except anthropic.AnthropicError as exc:
            raise _model_error(exc, model) from exc
        except httpx2.TransportError as exc:
            # The SDK wraps transport errors of the request, not those of reading a stream:
            # a connection dropped or timed out mid-stream arrives as httpx2's own error.
            raise ModelUnavailable(
                f"Anthropic: the stream broke off ({type(exc).__name__}: {exc}).",
                provider=PROVIDER,
                model=model,
            ) from exc
        yield _to_response(final, streamed=stream)

    def _check_credentials(self, model: str) -> None:
        """Raise ModelNotConfigured when the client agentd built has nothing to authenticate
        with; the SDK would raise a bare TypeError ("Could not resolve authentication method")
        from inside the request. A client of your own (`client=`) is taken as configured."""
        if self.client is not None:
            return
        client = self.api_client
        if not isinstance(client, AsyncAnthropic):
            return
        headers = {k.lower() for k in self.extra_headers or {}}
        if (
            client.api_key is not None
            or client.auth_token is not None
            or client.credentials is not None
            or headers & {"authorization", "x-api-key"}
        ):
            return
        raise ModelNotConfigured(
            f"{model} needs an Anthropic API key: set ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN) "
            "in agentd's environment and restart it (ANTHROPIC_BASE_URL for a gateway).",
            provider=PROVIDER,
            model=model,
            variables=["ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"],
        )

    async def aclose(self) -> None:
        """Release the client's HTTP connections (a later call opens new ones)."""
        if self._client is None:
            return
        client, self._client = self._client, None
        await client.close()

    def _params(self, llm_request: LlmRequest, model: str) -> dict[str, Any]:
        """The keyword arguments of `messages.create` / `messages.stream` for this request."""
        config = llm_request.config
        params: dict[str, Any] = {
            "model": model,
            "max_tokens": config.max_output_tokens or self.max_tokens,
            "messages": to_messages(llm_request.contents, model),
        }
        system = llm_request.system_instruction_text()
        if system:
            params["system"] = system
        tools, tool_choice = to_tools(config)
        if tools:
            params["tools"] = tools
            if tool_choice is not None:
                params["tool_choice"] = tool_choice
        if config.stop_sequences:
            params["stop_sequences"] = list(config.stop_sequences)
        schema = tool_schemas.response_json_schema(config)
        if schema is not None:
            params["output_config"] = {
                "format": {"type": "json_schema", "schema": transform_schema(schema)}
            }
        sampling = _sampling(config)
        if sampling:
            if self._pins_sampling_version():
                params["extra_body"] = sampling
            elif not self._warned_sampling:
                self._warned_sampling = True
                logger.warning(
                    "Claude %s: %s not sent: the API version the anthropic SDK uses rejects "
                    "them (pin 'anthropic-version: %s' in extra_headers to send them).",
                    model,
                    ", ".join(sorted(sampling)),
                    SAMPLING_API_VERSION,
                )
        return params

    def _pins_sampling_version(self) -> bool:
        headers = {k.lower(): v for k, v in (self.extra_headers or {}).items()}
        return headers.get("anthropic-version") == SAMPLING_API_VERSION


def _provider_model(name: str) -> str:
    return name[len(_PREFIX) :] if name.startswith(_PREFIX) else name


def _sampling(config: types.GenerateContentConfig) -> dict[str, float]:
    values = {"temperature": config.temperature, "top_p": config.top_p, "top_k": config.top_k}
    return {k: v for k, v in values.items() if v is not None}


# --- request mapping -----------------------------------------------------------------------


def to_messages(contents: list[types.Content], model: str = "") -> list[dict[str, Any]]:
    """The history as Messages API messages: alternating roles, tool results first."""
    messages: list[dict[str, Any]] = []
    for content in contents:
        role = "assistant" if content.role in ("model", "assistant") else "user"
        blocks = [
            block
            for part in content.parts or []
            if (block := _to_block(part, role, model)) is not None
        ]
        if not blocks:
            continue
        if messages and messages[-1]["role"] == role:
            messages[-1]["content"].extend(blocks)
        else:
            messages.append({"role": role, "content": blocks})
    for message in messages:
        # The API wants a user message's tool_result blocks before anything else in it.
        message["content"].sort(key=lambda block: block["type"] != "tool_result")
    return messages


def _to_block(part: types.Part, role: str, model: str) -> dict[str, Any] | None:
    """One content block for `part`; None for parts that are not sent (thoughts, empty text)."""
    if part.thought:
        return None
    if part.function_call is not None:
        call = part.function_call
        return {
            "type": "tool_use",
            "id": call.id or f"call_{call.name}",
            "name": call.name or "",
            "input": dict(call.args or {}),
        }
    if part.function_response is not None:
        answer = part.function_response
        response = answer.response or {}
        block: dict[str, Any] = {
            "type": "tool_result",
            "tool_use_id": answer.id or f"call_{answer.name}",
            "content": json.dumps(response, default=str, ensure_ascii=False),
        }
        if set(response) == {"error"}:
            block["is_error"] = True
        return block
    if part.text is not None:
        return {"type": "text", "text": part.text} if part.text else None
    if part.executable_code is not None:
        # Code a code executor ran (its result follows), shown to Claude as text; Python is
        # the one language genai names.
        code = part.executable_code.code or ""
        return {"type": "text", "text": f"```python\n{code}\n```"}
    if part.code_execution_result is not None:
        result = part.code_execution_result
        return {"type": "text", "text": f"Code execution result:\n{result.output or ''}"}
    if role == "user" and part.inline_data is not None:
        blob = part.inline_data
        mime = (blob.mime_type or "").split(";")[0].strip().lower()
        if mime in _IMAGE_TYPES and blob.data is not None:
            data = base64.b64encode(blob.data).decode("ascii")
            return {
                "type": "image",
                "source": {"type": "base64", "media_type": mime, "data": data},
            }
    if role == "user" and part.file_data is not None:
        file = part.file_data
        mime = (file.mime_type or "").lower()
        uri = file.file_uri or ""
        if mime.startswith("image/") and uri.startswith(("https://", "http://")):
            return {"type": "image", "source": {"type": "url", "url": uri}}
    kinds = ", ".join(sorted(part.model_dump(exclude_none=True))) or "empty"
    raise ModelRequestRejected(
        f"Claude cannot take this {role} part ({kinds}): it accepts text, function calls and "
        "responses, and user images (jpeg, png, gif, webp).",
        provider=PROVIDER,
        model=model,
    )


def to_tools(
    config: types.GenerateContentConfig,
) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """The declared functions as Messages API tools, and the tool choice for them."""
    declarations = tool_schemas.function_declarations(config)
    calling = config.tool_config.function_calling_config if config.tool_config else None
    mode = calling.mode if calling else None
    allowed = list(calling.allowed_function_names or []) if calling else []
    choice: dict[str, Any] | None = None
    if mode == types.FunctionCallingConfigMode.NONE:
        choice = {"type": "none"}
    elif mode == types.FunctionCallingConfigMode.ANY:
        if allowed:
            # Anthropic cannot restrict a choice to a subset: declare only the allowed tools.
            declarations = [d for d in declarations if d.name in allowed]
        choice = {"type": "tool", "name": allowed[0]} if len(allowed) == 1 else {"type": "any"}
    elif mode in (types.FunctionCallingConfigMode.AUTO, types.FunctionCallingConfigMode.VALIDATED):
        choice = {"type": "auto"}
    tools: list[dict[str, Any]] = []
    for declaration in declarations:
        tool: dict[str, Any] = {
            "name": declaration.name or "",
            "input_schema": tool_schemas.parameters_json_schema(declaration),
        }
        if declaration.description:
            tool["description"] = declaration.description
        tools.append(tool)
    return tools, choice


# --- response mapping ----------------------------------------------------------------------


def _partial(part: types.Part) -> LlmResponse:
    return LlmResponse(content=types.Content(role="model", parts=[part]), partial=True)


def _to_response(message: Message, *, streamed: bool = False) -> LlmResponse:
    """The final LlmResponse for a whole `Message` (an error response when it is empty)."""
    parts: list[types.Part] = []
    for block in message.content:
        if block.type == "text" and block.text:
            parts.append(types.Part(text=block.text))
        elif block.type == "thinking" and block.thinking:
            parts.append(types.Part(text=block.thinking, thought=True))
        elif block.type == "tool_use":
            call = types.FunctionCall(id=block.id, name=block.name, args=dict(block.input))
            parts.append(types.Part(function_call=call))
    finish_reason = finish_reason_of(message.stop_reason)
    usage = usage_of(message)
    turn_complete = True if streamed else None
    if not parts:
        return LlmResponse(
            error_code=message.stop_reason or "EMPTY_RESPONSE",
            error_message="The model returned no content.",
            finish_reason=finish_reason,
            usage_metadata=usage,
            model_version=message.model,
            turn_complete=turn_complete,
        )
    return LlmResponse(
        content=types.Content(role="model", parts=parts),
        partial=False if streamed else None,
        turn_complete=turn_complete,
        finish_reason=finish_reason,
        usage_metadata=usage,
        model_version=message.model,
    )


def finish_reason_of(stop_reason: str | None) -> types.FinishReason | None:
    """The genai finish reason for an Anthropic `stop_reason` (None when there is none)."""
    if stop_reason is None:
        return None
    return _FINISH_REASONS.get(stop_reason, types.FinishReason.OTHER)


def usage_of(message: Message) -> types.GenerateContentResponseUsageMetadata:
    """Token counts; the prompt counts cache reads and writes, as Gemini's does."""
    usage = message.usage
    cache_read = usage.cache_read_input_tokens or 0
    prompt = usage.input_tokens + cache_read + (usage.cache_creation_input_tokens or 0)
    return types.GenerateContentResponseUsageMetadata(
        prompt_token_count=prompt,
        candidates_token_count=usage.output_tokens,
        total_token_count=prompt + usage.output_tokens,
        cached_content_token_count=usage.cache_read_input_tokens,
    )


def _model_error(exc: anthropic.AnthropicError, model: str) -> ModelError:
    """The typed model error for an SDK exception (raised after the SDK's own retries)."""
    if isinstance(exc, anthropic.APIStatusError):
        # An `error` event inside a 200 stream arrives with the stream's status: judge it by
        # the error type of its body then, and report no HTTP status.
        status = exc.status_code if exc.status_code >= 400 else None
        detail = exc.api_message or exc.message
        if status == 429 or exc.type == "rate_limit_error":
            error_class: type[ModelError] = ModelRateLimited
        elif (status is not None and (status >= 500 or status == 408)) or (
            exc.type in _UNAVAILABLE_TYPES
        ):
            error_class = ModelUnavailable
        else:
            error_class = ModelRequestRejected
        return error_class(f"Anthropic: {detail}", provider=PROVIDER, model=model, status=status)
    if isinstance(exc, anthropic.APIError):
        # Connection errors and timeouts (APITimeoutError is an APIConnectionError), or an
        # answer the SDK could not read: nothing usable came back.
        status = getattr(exc, "status_code", None)
        return ModelUnavailable(
            f"Anthropic: {exc.message}", provider=PROVIDER, model=model, status=status
        )
    return ModelRequestRejected(f"Anthropic: {exc}", provider=PROVIDER, model=model)


#: ADK's name for the direct-API class (its `Claude` is the Vertex AI flavour): one class here,
#: since the SDK reads the endpoint from `base_url` / `client`.
AnthropicLlm = Claude
