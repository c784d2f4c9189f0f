"""The model port: LlmRequest in, LlmResponse stream out, answered by a BaseLlm backend.

Shapes follow ADK's `google.adk.models` so ADK-style callbacks (which read and edit
`llm_request.contents` / `llm_request.config` and build `LlmResponse(content=...)`) run unchanged.
"""

from abc import ABC, abstractmethod
from collections.abc import AsyncGenerator, Sequence
from typing import TYPE_CHECKING, Any

from google.genai import types
from pydantic import BaseModel, ConfigDict, Field

from app.models.registry import LLMRegistry
from app.sessions.models import ModelOutput

if TYPE_CHECKING:
    from app.tools.base_tool import BaseTool

#: The rough estimate of text per token where a backend has no tokenizer at hand.
CHARS_PER_TOKEN = 4

# LLMRegistry is re-exported: it lived here before it had a module of its own.
__all__ = [
    "BaseLlm",
    "LLMRegistry",
    "LlmCapabilities",
    "LlmRequest",
    "LlmResponse",
    "estimate_tokens",
]


def estimate_tokens(contents: Sequence[types.Content]) -> int:
    """~4 characters of the contents' JSON a token: the estimate for a model without a
    tokenizer at hand."""
    return sum(len(c.model_dump_json(exclude_none=True)) for c in contents) // CHARS_PER_TOKEN


class LlmRequest(BaseModel):
    """One call to a model: the conversation, the config (system instruction, tools) and tools."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    model: str | None = None
    contents: list[types.Content] = Field(default_factory=list)
    config: types.GenerateContentConfig = Field(default_factory=types.GenerateContentConfig)
    tools_dict: dict[str, Any] = Field(default_factory=dict, exclude=True)

    def append_instructions(self, instructions: list[str]) -> None:
        """Add text to the system instruction (paragraph-separated)."""
        text = "\n\n".join(i for i in instructions if i)
        if not text:
            return
        current = self.config.system_instruction
        if current is None:
            self.config.system_instruction = text
        elif isinstance(current, str):
            self.config.system_instruction = f"{current}\n\n{text}"
        elif isinstance(current, types.Content):
            current.parts = [*(current.parts or []), types.Part(text=text)]
        else:
            self.config.system_instruction = f"{current}\n\n{text}"

    def append_tools(self, tools: "list[BaseTool]") -> None:
        """Declare `tools` to the model and remember them by name for dispatch.

        Declarations join the request's one function-declarations Tool, so tools that declare
        themselves one by one (`BaseTool.process_llm_request`) still reach the model as one list.
        """
        declarations = []
        for tool in tools:
            declaration = tool.get_declaration()
            if declaration is not None:
                declarations.append(declaration)
                self.tools_dict[tool.name] = tool
        if not declarations:
            return
        existing = self.config.tools or []
        for entry in existing:
            if isinstance(entry, types.Tool) and entry.function_declarations is not None:
                entry.function_declarations.extend(declarations)
                return
        self.config.tools = [*existing, types.Tool(function_declarations=declarations)]

    def set_output_schema(self, schema: Any) -> None:
        """Ask the model for JSON that matches `schema` (a pydantic model or a type)."""
        self.config.response_schema = schema
        self.config.response_mime_type = "application/json"

    def system_instruction_text(self) -> str:
        """The system instruction flattened to text (for offline models and logs)."""
        current = self.config.system_instruction
        if current is None:
            return ""
        if isinstance(current, str):
            return current
        if isinstance(current, types.Content):
            return "".join(p.text or "" for p in current.parts or [])
        return str(current)


class LlmResponse(ModelOutput):
    """One (possibly partial) answer of a model, or an error it reported."""

    model_version: str | None = None

    @classmethod
    def create(cls, response: types.GenerateContentResponse) -> "LlmResponse":
        """Map a google-genai response to ours (an empty or blocked answer becomes an error)."""
        usage = response.usage_metadata
        if response.candidates:
            candidate = response.candidates[0]
            if candidate.content and candidate.content.parts:
                return cls(
                    content=candidate.content,
                    grounding_metadata=candidate.grounding_metadata,
                    finish_reason=candidate.finish_reason,
                    usage_metadata=usage,
                    model_version=response.model_version,
                )
            return cls(
                error_code=str(candidate.finish_reason.value) if candidate.finish_reason else None,
                error_message=candidate.finish_message,
                finish_reason=candidate.finish_reason,
                usage_metadata=usage,
                model_version=response.model_version,
            )
        feedback = response.prompt_feedback
        return cls(
            error_code=str(feedback.block_reason.value)
            if feedback and feedback.block_reason
            else "UNKNOWN_ERROR",
            error_message=feedback.block_reason_message if feedback else None,
            usage_metadata=usage,
            model_version=response.model_version,
        )


class LlmCapabilities(BaseModel):
    """What a backend can do beyond plain generation, where the engine must choose a strategy.

    `output_schema_with_tools`: the backend honours a response schema while tools are declared.
    When it cannot (Gemini's API today, as ADK decides outside Vertex AI), an agent with both
    `output_schema` and tools gets ADK's `set_model_response` tool instead.
    """

    model_config = ConfigDict(frozen=True)

    output_schema_with_tools: bool = False


class BaseLlm(BaseModel, ABC):
    """A model backend. Subclasses say which model names they serve in `supported_models`."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    model: str

    @property
    def capabilities(self) -> LlmCapabilities:
        """What this backend supports (see LlmCapabilities)."""
        return LlmCapabilities()

    @classmethod
    def supported_models(cls) -> list[str]:
        """Regexes of the model names this backend serves."""
        return []

    @abstractmethod
    def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        """Answer `llm_request`: one final response, or partial chunks then a final one."""

    def estimate_tokens(self, contents: Sequence[types.Content]) -> int:
        """About how many tokens `contents` costs this model, without a network call (a token
        budget asks it every turn). ~4 characters of their JSON a token; a backend with a local
        tokenizer overrides it."""
        return (
            sum(len(content.model_dump_json(exclude_none=True)) for content in contents)
            // CHARS_PER_TOKEN
        )
