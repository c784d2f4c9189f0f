"""The OpenAI backend: Chat Completions through the official `openai` SDK.

Chat Completions is the one wire format that OpenAI, Azure OpenAI and the OpenAI-compatible
servers (vLLM, Ollama, LM Studio, OpenRouter, ...) all speak, so one backend serves them all:
point `base_url` at the server. The SDK owns authentication, its environment variables
(`OPENAI_API_KEY`, `OPENAI_BASE_URL`, `OPENAI_ORG_ID`, `OPENAI_PROJECT_ID`, and for Azure
`AZURE_OPENAI_API_KEY`, `AZURE_OPENAI_ENDPOINT`, `OPENAI_API_VERSION`), the HTTP connection pool
and SSE parsing; a field left None here leaves the SDK to its own default, so agentd adds no
setting of its own. One default is ours: a server other than OpenAI's (named by `base_url` or
`OPENAI_BASE_URL`) with no key configured gets the placeholder key `no-key`, since local servers
need none but the SDK refuses to start without one. A client the SDK refuses to build (no key,
no Azure endpoint) is `ModelNotConfigured` (503 `model-not-configured`) naming the variables to
set. This module only translates between the model port (google-genai shapes, as ADK's) and
Chat Completions.

Retries are the SDK's: a 408, 409, 429 or 5xx answer and a connection failure or timeout are
retried `max_retries` times (default 2), waiting what `retry-after-ms` / `retry-after` asks (when
between 0 and 120 seconds, exclusive of 0) or else an exponential backoff from 0.5 s to 8 s with
jitter; a `retry-after` above 120 s is not retried at all. Only what still fails reaches us: it is
raised as a typed `ModelError` (`ModelRateLimited`, `ModelUnavailable`, `ModelRequestRejected`)
chained to the SDK's exception, for `on_model_error_callback`, FallbackModel and the stored
error event.

Mapped: the system instruction (a `system` message), the history (user text and inline or
http(s) images, model text, function calls as `tool_calls`, function responses as `tool`
messages), tools (their JSON Schema), tool choice (AUTO/ANY/NONE, one allowed name as a named
choice, several by declaring only those), temperature, top_p, max output tokens
(`max_completion_tokens`), stop sequences, seed, presence/frequency penalties, response schema
(`json_schema`) and JSON mode (`json_object`). Back: text, tool calls, `reasoning_content` /
`reasoning` (vLLM, Ollama, DeepSeek) as thought parts, usage (with cached prompt tokens),
finish reason and the model name. Not mapped: thoughts and thinking config (not sent), other
inline data than images (audio, PDF: dropped with a warning), `candidate_count` (one choice),
logprobs, code execution and built-in tools.
"""

import asyncio
import base64
import json
import logging
import os
from collections.abc import AsyncGenerator, Iterable
from dataclasses import dataclass, field
from typing import Any, cast

import openai
from google.genai import types
from openai.types.chat import ChatCompletion, ChatCompletionChunk, ChatCompletionMessageParam
from openai.types.completion_usage import CompletionUsage
from pydantic import PrivateAttr

from app.errors import (
    ModelError,
    ModelNotConfigured,
    ModelRateLimited,
    ModelRequestRejected,
    ModelUnavailable,
)
from app.models import tool_schemas
from app.models.llm import BaseLlm, LlmRequest, LlmResponse

log = logging.getLogger(__name__)

PROVIDER = "openai"
_PREFIX = "openai/"
#: The key sent to a server other than OpenAI's when none is configured: local servers (Ollama,
#: vLLM, LM Studio) take any, but the SDK refuses to start without one.
NO_KEY = "no-key"

_FINISH_REASONS = {
    "stop": types.FinishReason.STOP,
    "length": types.FinishReason.MAX_TOKENS,
    "tool_calls": types.FinishReason.STOP,
    "function_call": types.FinishReason.STOP,
    "content_filter": types.FinishReason.SAFETY,
}


class OpenAILlm(BaseLlm):
    """Chat Completions models (OpenAI, Azure OpenAI, OpenAI-compatible servers).

    `model` may carry the routing prefix (`openai/gpt-4o-mini` is sent as `gpt-4o-mini`).
    `api_version` set means Azure OpenAI: `base_url` is then the Azure endpoint and `model` the
    deployment name.
    """

    api_key: str | None = None
    base_url: str | None = None
    organization: str | None = None
    api_version: str | None = None
    extra_headers: dict[str, str] | None = None
    max_retries: int = 2
    timeout: float | None = None

    _client: openai.AsyncOpenAI | None = PrivateAttr(default=None)
    #: The event loop the client's connections belong to (see `client`).
    _client_loop: asyncio.AbstractEventLoop | None = PrivateAttr(default=None)

    @classmethod
    def supported_models(cls) -> list[str]:
        """Regexes of the model names this backend serves."""
        return [r"openai/.+", r"gpt-.*", r"o[1-9].*", r"chatgpt-.*"]

    @property
    def provider_model(self) -> str:
        """The model name the provider gets (without the `openai/` routing prefix)."""
        return _strip_prefix(self.model)

    @property
    def client(self) -> openai.AsyncOpenAI:
        """The SDK client, created on first use (so an agent can be defined without a key).

        A client's pooled connections belong to the event loop that opened them; scripts (and
        ADK's examples) call `asyncio.run` once per turn, so a new loop gets a new client.
        """
        try:
            loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:  # outside a loop (inspecting the configuration)
            loop = self._client_loop
        if self._client is None or self._client_loop is not loop:
            self._client = self._new_client()
            self._client_loop = loop
        return self._client

    def _new_client(self) -> openai.AsyncOpenAI:
        # None leaves each setting to the SDK (environment variables, then its defaults); the
        # timeout must not be passed as None, which would mean "no timeout" to the SDK.
        timeout: float | openai.NotGiven = (
            self.timeout if self.timeout is not None else openai.not_given
        )
        api_key = self.api_key
        base_url = self.base_url or os.environ.get("OPENAI_BASE_URL")
        if (
            api_key is None
            and self.api_version is None
            and not os.environ.get("OPENAI_API_KEY")
            and base_url
            and "api.openai.com" not in base_url
        ):
            api_key = NO_KEY
        try:
            if self.api_version is not None and self.base_url is not None:
                return openai.AsyncAzureOpenAI(
                    azure_endpoint=self.base_url,
                    api_version=self.api_version,
                    api_key=self.api_key,
                    organization=self.organization,
                    default_headers=self.extra_headers,
                    max_retries=self.max_retries,
                    timeout=timeout,
                )
            if self.api_version is not None:
                # The endpoint comes from AZURE_OPENAI_ENDPOINT.
                return openai.AsyncAzureOpenAI(
                    api_version=self.api_version,
                    api_key=self.api_key,
                    organization=self.organization,
                    default_headers=self.extra_headers,
                    max_retries=self.max_retries,
                    timeout=timeout,
                )
            return openai.AsyncOpenAI(
                api_key=api_key,
                base_url=self.base_url,
                organization=self.organization,
                default_headers=self.extra_headers,
                max_retries=self.max_retries,
                timeout=timeout,
            )
        except (openai.OpenAIError, ValueError) as exc:
            # Missing credentials or Azure endpoint: no request can be made, none is retried.
            raise self._not_configured(exc) from exc

    def _not_configured(self, cause: Exception) -> ModelNotConfigured:
        """The problem for a client the SDK refused to build, naming the variables to set."""
        model = self.provider_model
        if self.api_version is None:
            return ModelNotConfigured(
                f"{model} needs an OpenAI API key: set OPENAI_API_KEY in agentd's environment "
                "(or OPENAI_BASE_URL for an OpenAI-compatible server that needs none) and "
                "restart it.",
                provider=PROVIDER,
                model=model,
                variables=["OPENAI_API_KEY", "OPENAI_BASE_URL"],
            )
        variables = []
        if self.base_url is None and not os.environ.get("AZURE_OPENAI_ENDPOINT"):
            variables.append("AZURE_OPENAI_ENDPOINT")
        if self.api_key is None and not (
            os.environ.get("AZURE_OPENAI_API_KEY") or os.environ.get("AZURE_OPENAI_AD_TOKEN")
        ):
            variables.append("AZURE_OPENAI_API_KEY")
        if not variables:  # refused for another reason: say what the SDK said
            variables = ["AZURE_OPENAI_ENDPOINT", "AZURE_OPENAI_API_KEY"]
        return ModelNotConfigured(
            f"Azure OpenAI deployment {model} is not configured: set "
            f"{' and '.join(variables)} in agentd's environment and restart it ({cause}).",
            provider="azure",
            model=model,
            variables=variables,
        )

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        """Answer `llm_request`: one final response, or partial text chunks then a final one."""
        model = _strip_prefix(llm_request.model or self.model)
        messages = cast(list[ChatCompletionMessageParam], to_messages(llm_request))
        options = request_options(llm_request.config)
        completions = self.client.chat.completions
        if not stream:
            try:
                completion = await completions.create(model=model, messages=messages, **options)
            except openai.APIError as exc:
                raise _model_error(exc, model) from exc
            yield from_completion(completion)
            return

        aggregator = _StreamAggregator()
        try:
            chunks = await completions.create(
                model=model,
                messages=messages,
                stream=True,
                stream_options={"include_usage": True},
                **options,
            )
            # The context manager closes the HTTP response however the loop ends: at the end,
            # on an error, or when our consumer stops early (GeneratorExit / CancelledError at a
            # `yield`), so an abandoned answer does not keep the provider generating.
            async with chunks:
                async for chunk in chunks:
                    for partial in aggregator.add(chunk):
                        yield partial
        except openai.APIError as exc:
            raise _model_error(exc, model) from exc
        yield aggregator.final()

    async def aclose(self) -> None:
        """Release the client's HTTP connections (a later call opens new ones)."""
        if self._client is None:
            return
        client, self._client = self._client, None
        await client.close()


def _strip_prefix(model: str) -> str:
    return model.removeprefix(_PREFIX)


# -- errors ---------------------------------------------------------------------------------------


def _model_error(exc: openai.APIError, model: str) -> ModelError:
    """The typed agentd error for an SDK failure that survived the SDK's retries."""
    after = _after_retries(exc)
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        message = _error_message(exc)
        if isinstance(exc, openai.RateLimitError) or status == 429:
            return ModelRateLimited(
                f"{model} is rate limited by the provider (HTTP 429){after}: {message}",
                provider=PROVIDER,
                model=model,
                status=status,
            )
        if status >= 500:
            return ModelUnavailable(
                f"{model} failed at the provider (HTTP {status}){after}: {message}",
                provider=PROVIDER,
                model=model,
                status=status,
            )
        return ModelRequestRejected(
            f"The provider rejected the request to {model} (HTTP {status}): {message}",
            provider=PROVIDER,
            model=model,
            status=status,
        )
    if isinstance(exc, openai.APITimeoutError):
        detail = f"{model} did not answer in time{after}."
    elif isinstance(exc, openai.APIConnectionError):
        detail = f"{model}'s provider cannot be reached{after}: {exc.message} ({exc.request.url})"
    else:
        # An error event inside a stream that had started with 200 OK.
        detail = f"{model} failed while answering: {exc.message}"
    return ModelUnavailable(detail, provider=PROVIDER, model=model, status=None)


def _after_retries(exc: openai.APIError) -> str:
    """How many retries the SDK made, from the retry counter it sends on the last request
    (a `retry-after` over 120 s or `x-should-retry: false` stops it before `max_retries`)."""
    try:
        count = int(exc.request.headers.get("x-stainless-retry-count") or 0)
    except (RuntimeError, ValueError):  # no request (an SDK-side failure) or an odd header
        return ""
    if count <= 0:
        return ""
    return f" (after {count} {'retry' if count == 1 else 'retries'})"


def _error_message(exc: openai.APIStatusError) -> str:
    """The provider's own message (`{"error": {"message": ...}}`), else the SDK's."""
    body = exc.body
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return str(error["message"])
        if isinstance(body.get("message"), str):
            return str(body["message"])
    return exc.message


# -- request --------------------------------------------------------------------------------------


def to_messages(request: LlmRequest) -> list[dict[str, Any]]:
    """The Chat Completions `messages` for a request: system instruction, then the history."""
    messages: list[dict[str, Any]] = []
    system = request.system_instruction_text()
    if system:
        messages.append({"role": "system", "content": system})
    ids = _CallIds()
    for content in request.contents:
        parts = list(content.parts or [])
        if content.role == "model":
            message = _assistant_message(parts, ids)
            if message is not None:
                messages.append(message)
        else:
            messages.extend(_user_messages(parts, ids))
    return messages


@dataclass
class _CallIds:
    """Tool call ids for calls stored without one (a history written by another backend)."""

    pending: dict[str, list[str]] = field(default_factory=dict)
    count: int = 0

    def for_call(self, call: types.FunctionCall) -> str:
        call_id = call.id
        if not call_id:
            self.count += 1
            call_id = f"call_{self.count}"
        self.pending.setdefault(call.name or "", []).append(call_id)
        return call_id

    def for_response(self, response: types.FunctionResponse) -> str:
        waiting = self.pending.get(response.name or "", [])
        if response.id:
            if response.id in waiting:
                waiting.remove(response.id)
            return response.id
        if waiting:
            return waiting.pop(0)
        self.count += 1
        return f"call_{self.count}"


def _assistant_message(parts: list[types.Part], ids: _CallIds) -> dict[str, Any] | None:
    text = "".join(p.text for p in parts if p.text and not p.thought)
    calls = [
        {
            "id": ids.for_call(p.function_call),
            "type": "function",
            "function": {
                "name": p.function_call.name or "",
                "arguments": json.dumps(p.function_call.args or {}, ensure_ascii=False),
            },
        }
        for p in parts
        if p.function_call is not None
    ]
    if not text and not calls:
        return None
    message: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        message["tool_calls"] = calls
    return message


def _user_messages(parts: list[types.Part], ids: _CallIds) -> list[dict[str, Any]]:
    """`tool` messages for the function responses, then one `user` message for the rest."""
    messages: list[dict[str, Any]] = []
    content: list[dict[str, Any]] = []
    for part in parts:
        if part.function_response is not None:
            response = part.function_response
            messages.append(
                {
                    "role": "tool",
                    "tool_call_id": ids.for_response(response),
                    "content": json.dumps(response.response or {}, ensure_ascii=False, default=str),
                }
            )
        elif part.thought:
            continue
        elif part.text:
            content.append({"type": "text", "text": part.text})
        elif (image := _image_url(part)) is not None:
            content.append({"type": "image_url", "image_url": {"url": image}})
        elif part.inline_data is not None or part.file_data is not None:
            blob = part.inline_data or part.file_data
            log.warning(
                "OpenAILlm drops a %s part: Chat Completions takes text and images only.",
                getattr(blob, "mime_type", None) or "data",
            )
    if content:
        if all(c["type"] == "text" for c in content):
            # Plain text as a string: the form every OpenAI-compatible server accepts.
            text = "\n".join(c["text"] for c in content)
            messages.append({"role": "user", "content": text})
        else:
            messages.append({"role": "user", "content": content})
    return messages


def _image_url(part: types.Part) -> str | None:
    """A data: URI for an inline image, or the URL of an http(s) image file."""
    blob = part.inline_data
    if blob is not None and (blob.mime_type or "").startswith("image/") and blob.data:
        encoded = base64.b64encode(blob.data).decode("ascii")
        return f"data:{blob.mime_type};base64,{encoded}"
    file = part.file_data
    if (
        file is not None
        and (file.mime_type or "image/").startswith("image/")
        and (file.file_uri or "").startswith(("http://", "https://", "data:"))
    ):
        return file.file_uri
    return None


def request_options(config: types.GenerateContentConfig) -> dict[str, Any]:
    """The Chat Completions parameters other than `model`, `messages` and streaming."""
    options: dict[str, Any] = {}
    declarations = tool_schemas.function_declarations(config)
    choice = _tool_choice(config)
    if choice is not None and isinstance(choice[1], list):
        allowed = set(choice[1])
        declarations = [d for d in declarations if d.name in allowed]
        choice = (choice[0], None)
    if declarations:
        options["tools"] = [_tool(d) for d in declarations]
        if choice is not None:
            options["tool_choice"] = choice[0]
    if config.temperature is not None:
        options["temperature"] = config.temperature
    if config.top_p is not None:
        options["top_p"] = config.top_p
    if config.max_output_tokens is not None:
        # `max_tokens` is deprecated for Chat Completions and refused by reasoning models.
        options["max_completion_tokens"] = config.max_output_tokens
    if config.stop_sequences:
        options["stop"] = list(config.stop_sequences)
    if config.seed is not None:
        options["seed"] = config.seed
    if config.presence_penalty is not None:
        options["presence_penalty"] = config.presence_penalty
    if config.frequency_penalty is not None:
        options["frequency_penalty"] = config.frequency_penalty
    schema = tool_schemas.response_json_schema(config)
    if schema is not None:
        options["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": "response", "schema": schema},
        }
    elif config.response_mime_type == "application/json":
        options["response_format"] = {"type": "json_object"}
    return options


def _tool(declaration: types.FunctionDeclaration) -> dict[str, Any]:
    function: dict[str, Any] = {
        "name": declaration.name or "",
        "parameters": tool_schemas.parameters_json_schema(declaration),
    }
    if declaration.description:
        function["description"] = declaration.description
    return {"type": "function", "function": function}


def _tool_choice(config: types.GenerateContentConfig) -> tuple[Any, list[str] | None] | None:
    """(tool_choice, names to restrict the declared tools to) from the function calling mode.

    ANY with several allowed names declares only those (with `required`): every
    OpenAI-compatible server takes that, while `allowed_tools` is OpenAI's alone.
    """
    calling = config.tool_config.function_calling_config if config.tool_config else None
    if calling is None or calling.mode is None:
        return None
    mode = calling.mode
    if mode == types.FunctionCallingConfigMode.NONE:
        return ("none", None)
    if mode == types.FunctionCallingConfigMode.ANY:
        names = list(calling.allowed_function_names or [])
        if len(names) == 1:
            return ({"type": "function", "function": {"name": names[0]}}, None)
        return ("required", names or None)
    if mode in (types.FunctionCallingConfigMode.AUTO, types.FunctionCallingConfigMode.VALIDATED):
        return ("auto", None)
    return None


# -- response -------------------------------------------------------------------------------------


def finish_reason(reason: str | None) -> types.FinishReason | None:
    """A Chat Completions finish reason as google-genai's."""
    if reason is None:
        return None
    return _FINISH_REASONS.get(reason, types.FinishReason.OTHER)


def usage_metadata(usage: CompletionUsage | None) -> types.GenerateContentResponseUsageMetadata:
    """Token counts as google-genai's usage metadata."""
    if usage is None:
        return types.GenerateContentResponseUsageMetadata()
    details = usage.prompt_tokens_details
    return types.GenerateContentResponseUsageMetadata(
        prompt_token_count=usage.prompt_tokens,
        candidates_token_count=usage.completion_tokens,
        total_token_count=usage.total_tokens,
        cached_content_token_count=details.cached_tokens if details else None,
    )


def _reasoning(message: Any) -> str | None:
    """The reasoning text some servers add (`reasoning_content`: vLLM, DeepSeek; `reasoning`:
    Ollama, OpenRouter), kept by the SDK as extra fields."""
    extra = getattr(message, "model_extra", None) or {}
    for key in ("reasoning_content", "reasoning"):
        value = extra.get(key)
        if isinstance(value, str) and value:
            return value
    return None


@dataclass
class _Call:
    id: str | None = None
    name: str = ""
    arguments: str = ""


def _answer(
    *,
    thought: str,
    text: str,
    calls: Iterable[_Call],
    reason: str | None,
    usage: CompletionUsage | None,
    model: str | None,
    refusal: str | None = None,
) -> LlmResponse:
    """The final response for a whole answer (non-streamed or assembled from a stream)."""
    common: dict[str, Any] = {
        "finish_reason": finish_reason(reason),
        "usage_metadata": usage_metadata(usage) if usage is not None else None,
        "model_version": model,
        "turn_complete": True,
    }
    parts: list[types.Part] = []
    if thought:
        parts.append(types.Part(text=thought, thought=True))
    if text:
        parts.append(types.Part(text=text))
    for index, call in enumerate(calls):
        try:
            args = json.loads(call.arguments) if call.arguments.strip() else {}
        except json.JSONDecodeError as exc:
            return LlmResponse(
                error_code=types.FinishReason.MALFORMED_FUNCTION_CALL.value,
                error_message=f"The arguments of {call.name} are not JSON ({exc}): "
                f"{call.arguments[:200]}",
                **{**common, "finish_reason": types.FinishReason.MALFORMED_FUNCTION_CALL},
            )
        if not isinstance(args, dict):
            args = {"value": args}
        call_id = call.id or f"call_{index + 1}"
        parts.append(
            types.Part(function_call=types.FunctionCall(id=call_id, name=call.name, args=args))
        )
    if refusal and not text:
        return LlmResponse(error_code="REFUSAL", error_message=refusal, **common)
    if not parts:
        reason_enum = common["finish_reason"]
        return LlmResponse(
            error_code=str(reason_enum.value) if reason_enum else "EMPTY_RESPONSE",
            error_message="The model returned no content.",
            **common,
        )
    return LlmResponse(content=types.Content(role="model", parts=parts), **common)


def from_completion(completion: ChatCompletion) -> LlmResponse:
    """A non-streamed Chat Completion as one final response."""
    if not completion.choices:
        return _answer(
            thought="",
            text="",
            calls=[],
            reason=None,
            usage=completion.usage,
            model=completion.model,
        )
    choice = completion.choices[0]
    message = choice.message
    calls = [
        _Call(id=c.id, name=c.function.name, arguments=c.function.arguments or "")
        for c in message.tool_calls or []
        if c.type == "function"
    ]
    return _answer(
        thought=_reasoning(message) or "",
        text=message.content or "",
        calls=calls,
        reason=choice.finish_reason,
        usage=completion.usage,
        model=completion.model,
        refusal=message.refusal,
    )


class _StreamAggregator:
    """Folds stream chunks into partial text responses and one final response.

    Text (and reasoning) deltas are yielded at once as partial responses; tool-call deltas are
    assembled by their `index` and issued only in the final response, once their JSON arguments
    are whole. A delta whose `id` differs from the one at its index starts a new call (servers
    that send every call whole at index 0), and one without an index is a whole call.
    """

    def __init__(self) -> None:
        self.received = False
        self.thought: list[str] = []
        self.text: list[str] = []
        self.refusal: list[str] = []
        self.calls: list[_Call] = []
        self.slots: dict[int, _Call] = {}
        self.reason: str | None = None
        self.usage: CompletionUsage | None = None
        self.model: str | None = None

    def add(self, chunk: ChatCompletionChunk) -> list[LlmResponse]:
        """Take in one chunk; the partial responses to yield for it."""
        self.received = True
        self.model = chunk.model or self.model
        self.usage = chunk.usage or self.usage
        partials: list[LlmResponse] = []
        for choice in chunk.choices or []:
            if choice.index != 0:
                continue
            self.reason = choice.finish_reason or self.reason
            delta = choice.delta
            if delta is None:
                continue
            thought = _reasoning(delta)
            if thought:
                self.thought.append(thought)
                partials.append(self._partial(types.Part(text=thought, thought=True)))
            if delta.content:
                self.text.append(delta.content)
                partials.append(self._partial(types.Part(text=delta.content)))
            if delta.refusal:
                self.refusal.append(delta.refusal)
            for call in delta.tool_calls or []:
                self._add_call(call)
        return partials

    def _partial(self, part: types.Part) -> LlmResponse:
        return LlmResponse(
            content=types.Content(role="model", parts=[part]),
            partial=True,
            model_version=self.model,
        )

    def _add_call(self, delta: Any) -> None:
        index = getattr(delta, "index", None)
        function = getattr(delta, "function", None)
        call_id = getattr(delta, "id", None)
        slot = self.slots.get(index) if isinstance(index, int) else None
        if slot is None or (call_id and slot.id and call_id != slot.id):
            slot = _Call()
            self.calls.append(slot)
            if isinstance(index, int):
                self.slots[index] = slot
        if call_id and not slot.id:
            slot.id = call_id
        if function is not None:
            if function.name and not slot.name:
                slot.name = function.name
            if function.arguments:
                slot.arguments += function.arguments

    def final(self) -> LlmResponse:
        """The end of the stream: all text as one part plus the tool calls, or an error."""
        if not self.received:
            return LlmResponse(
                error_code="EMPTY_RESPONSE",
                error_message="The model returned an empty stream.",
                turn_complete=True,
            )
        return _answer(
            thought="".join(self.thought),
            text="".join(self.text),
            calls=self.calls,
            reason=self.reason,
            usage=self.usage,
            model=self.model,
            refusal="".join(self.refusal) or None,
        )
