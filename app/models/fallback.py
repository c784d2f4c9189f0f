"""FallbackModel: a chain of models; when one fails in a way another may not, the next answers.

A failure counts as retryable when trying elsewhere may help: agentd's `ModelRateLimited` and
`ModelUnavailable` (OpenAI and Anthropic, after their SDKs' own retries), google-genai's 429 and
5xx `APIError`s, timeouts and connection errors, and a model without credentials
(`ModelNotConfigured`: a chain may name providers only some deployments have keys for).
Anything else (a rejected request, a bug in a callback) is raised at once: another model would
fail the same way. A model that fails after it
has streamed part of its answer is not replaced, since the client has seen that text already.

Which model answered is on the event: `modelVersion` (the provider's, or the backend's model
name when the provider gave none) and `customMetadata.fallback` = {"model": <name>, "index":
<position in the chain>, "failed": [{"model", "error"} of the models tried before]}. When every
model fails, one `ModelUnavailable` names them all (`ModelNotConfigured`, naming every variable,
when none of them had credentials).
"""

from collections.abc import AsyncGenerator
from typing import Any

from google.genai import errors as genai_errors
from pydantic import Field, field_validator

from app.errors import ModelError, ModelNotConfigured, ModelUnavailable
from app.models.llm import BaseLlm, LlmRequest, LlmResponse
from app.models.registry import LLMRegistry


def is_retryable(error: BaseException) -> bool:
    """Whether another model (or a later attempt) may succeed where this failure happened."""
    if isinstance(error, ModelNotConfigured):
        return True  # this model cannot be called here; the next one may be configured
    if isinstance(error, ModelError):
        return error.retryable
    if isinstance(error, genai_errors.APIError):
        return error.code == 429 or error.code >= 500
    return isinstance(error, TimeoutError | ConnectionError)


class FallbackModel(BaseLlm):
    """Tries `models` in order for each call (names are resolved through the registry)."""

    model: str = "fallback"
    models: list[BaseLlm] = Field(min_length=1)

    @field_validator("models", mode="before")
    @classmethod
    def _resolve_names(cls, value: Any) -> Any:
        if not isinstance(value, list):
            return value
        return [LLMRegistry.new_llm(m) if isinstance(m, str) else m for m in value]

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        """The first model's answer that does not fail retryably before it starts."""
        failed: list[dict[str, str]] = []
        unconfigured: list[ModelNotConfigured] = []
        for index, backend in enumerate(self.models):
            request = llm_request.model_copy(update={"model": backend.model})
            started = False
            try:
                async for response in backend.generate_content_async(request, stream=stream):
                    started = True
                    yield _labelled(response, backend, index, failed)
                return
            except Exception as error:
                if started or not is_retryable(error):
                    raise
                failed.append({"model": backend.model, "error": _describe(error)})
                if isinstance(error, ModelNotConfigured):
                    unconfigured.append(error)
        names = ", ".join(f["model"] for f in failed)
        if len(unconfigured) == len(failed):
            # Nothing answered because nothing is configured: say what to set, for each.
            raise ModelNotConfigured(
                " ".join(e.detail or "" for e in unconfigured),
                provider="fallback",
                model=self.model,
                variables=list(dict.fromkeys(v for e in unconfigured for v in e.variables)),
                failed=failed,
            )
        raise ModelUnavailable(
            f"Every model of the fallback chain failed ({names}).",
            provider="fallback",
            model=self.model,
            failed=failed,
        )


def _labelled(
    response: LlmResponse, backend: BaseLlm, index: int, failed: list[dict[str, str]]
) -> LlmResponse:
    metadata = dict(response.custom_metadata or {})
    metadata["fallback"] = {"model": backend.model, "index": index, "failed": list(failed)}
    return response.model_copy(
        update={
            "custom_metadata": metadata,
            "model_version": response.model_version or backend.model,
        }
    )


def _describe(error: BaseException) -> str:
    if isinstance(error, ModelError):
        return f"{error.type}: {error.detail or error.title}"
    return f"{type(error).__name__}: {error}"
