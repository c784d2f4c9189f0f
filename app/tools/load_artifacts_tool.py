"""load_artifacts: the model sees the session's artifact names and reads the ones it asks for.

As ADK does: before every model call the artifact names go into the system instruction; when
the model calls `load_artifacts`, the call's response only confirms the names, and the next model
request (not the session) gets each named artifact's content as a user turn. Content Gemini
cannot take inline (anything but images, audio, video and PDF) is given as text when it is
text-like, else described by type and size. A name not found in the session is also tried as
`user:<name>`.
"""

import json
import logging
from typing import TYPE_CHECKING, Any

from google.genai import types

from app.contexts.tool import ToolContext
from app.tools.base_tool import BaseTool

if TYPE_CHECKING:
    from app.models.llm import LlmRequest

logger = logging.getLogger(__name__)

_INLINE_PREFIXES = ("image/", "audio/", "video/")
_INLINE_TYPES = frozenset({"application/pdf"})
_NOT_INLINE = frozenset({"image/svg+xml"})
_TEXT_TYPES = frozenset({"application/json", "application/xml", "application/csv", "image/svg+xml"})


class LoadArtifactsTool(BaseTool):
    """Lets the model read the session's (and the user's) artifacts."""

    def __init__(self) -> None:
        super().__init__(
            name="load_artifacts",
            description=(
                "Loads artifacts into the session for this request.\n\n"
                "NOTE: Call when you need access to artifacts (for example, uploads saved by "
                "the web UI)."
            ),
        )

    def get_declaration(self) -> types.FunctionDeclaration:
        """One parameter: the names of the artifacts to load."""
        names = types.Schema(type=types.Type.ARRAY, items=types.Schema(type=types.Type.STRING))
        return types.FunctionDeclaration(
            name=self.name,
            description=self.description,
            parameters=types.Schema(type=types.Type.OBJECT, properties={"artifact_names": names}),
        )

    async def run_async(self, *, args: dict[str, Any], tool_context: ToolContext) -> Any:
        """The names asked for (their content reaches the next model request)."""
        del tool_context
        return {
            "artifact_names": [str(n) for n in args.get("artifact_names") or []],
            "status": (
                "artifact contents temporarily inserted and removed. to access these artifacts, "
                "call load_artifacts tool again."
            ),
        }

    async def process_llm_request(
        self, *, tool_context: ToolContext, llm_request: "LlmRequest"
    ) -> None:
        """Declare the tool, list the artifacts, and attach those the last call named."""
        await super().process_llm_request(tool_context=tool_context, llm_request=llm_request)
        available = await tool_context.list_artifacts()
        if not available:
            return
        llm_request.append_instructions(
            [
                f"You have a list of artifacts:\n  {json.dumps(available)}\n\n"
                "When the user asks questions about any of the artifacts, you should call the "
                "`load_artifacts` function to load the artifact. Always call load_artifacts "
                "before answering questions related to the artifacts, regardless of whether the "
                "artifacts have been loaded before. Do not depend on prior answers about the "
                "artifacts."
            ]
        )
        last = llm_request.contents[-1] if llm_request.contents else None
        response = last.parts[0].function_response if last and last.parts else None
        if response is None or response.name != self.name:
            return
        for name in (response.response or {}).get("artifact_names") or []:
            part = await tool_context.load_artifact(name)
            if part is None and not name.startswith("user:"):
                part = await tool_context.load_artifact(f"user:{name}")
            if part is None:
                logger.warning("artifact %r not found, skipping", name)
                continue
            llm_request.contents.append(
                types.Content(
                    role="user",
                    parts=[types.Part(text=f"Artifact {name} is:"), _safe_for_model(name, part)],
                )
            )


def _safe_for_model(name: str, part: types.Part) -> types.Part:
    """The artifact as a part Gemini accepts: inline media as is, other content as text."""
    blob = part.inline_data
    if blob is None:
        return part
    mime_type = (blob.mime_type or "application/octet-stream").split(";", 1)[0].strip()
    if mime_type not in _NOT_INLINE and (
        mime_type.startswith(_INLINE_PREFIXES) or mime_type in _INLINE_TYPES
    ):
        return part
    if blob.data is None:
        return types.Part(
            text=f"[Artifact: {name}, type: {mime_type}. No inline data was provided.]"
        )
    if mime_type.startswith("text/") or mime_type in _TEXT_TYPES:
        return types.Part(text=blob.data.decode("utf-8", errors="replace"))
    return types.Part(
        text=(
            f"[Binary artifact: {name}, type: {mime_type}, size: {len(blob.data) / 1024:.1f} KB. "
            "Content cannot be displayed inline.]"
        )
    )


load_artifacts_tool = LoadArtifactsTool()
