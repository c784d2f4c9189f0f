"""load_artifacts: the model lists the session's artifacts and reads the ones it names.

ADK lists the artifacts in the system instruction and splices the named ones into the next model
request, from a request hook LlmAgent does not call. Here the function response carries both:
the names available (so a call without names lists them) and the content of each named artifact,
text as text; other content (images, PDFs, bytes) is described by type and size, since a function
response holds JSON only. A name not found in the session is also tried as `user:<name>`.
"""

from typing import Any

from google.genai import types

from app.contexts.tool import ToolContext
from app.tools.base_tool import BaseTool

_TEXT_TYPES = frozenset({"application/json", "application/xml", "application/csv", "image/svg+xml"})


class LoadArtifactsTool(BaseTool):
    """Reads artifacts of the session (and the user's) for the model."""

    def __init__(self) -> None:
        super().__init__(
            name="load_artifacts",
            description=(
                "Loads artifacts into the session for this request.\n\n"
                "NOTE: Call when you need access to artifacts (for example, uploads). Call it "
                "without artifact_names to list the artifacts available."
            ),
        )

    def get_declaration(self) -> types.FunctionDeclaration:
        """One optional parameter: the names of the artifacts to load."""
        names = types.Schema(type=types.Type.ARRAY, items=types.Schema(type=types.Type.STRING))
        return types.FunctionDeclaration(
            name=self.name,
            description=self.description,
            parameters=types.Schema(type=types.Type.OBJECT, properties={"artifact_names": names}),
        )

    async def run_async(self, *, args: dict[str, Any], tool_context: ToolContext) -> Any:
        """The artifacts available, and the content of those named in `artifact_names`."""
        names = [str(n) for n in args.get("artifact_names") or []]
        loaded: dict[str, str] = {}
        missing: list[str] = []
        for name in names:
            part = await tool_context.load_artifact(name)
            if part is None and not name.startswith("user:"):
                part = await tool_context.load_artifact(f"user:{name}")
            if part is None:
                missing.append(name)
            else:
                loaded[name] = _as_text(name, part)
        result: dict[str, Any] = {
            "available_artifacts": await tool_context.list_artifacts(),
            "artifacts": loaded,
        }
        if missing:
            result["not_found"] = missing
        return result


def _as_text(name: str, part: types.Part) -> str:
    """The artifact as text the model can read, or a description of content that is not text."""
    if part.text is not None:
        return part.text
    blob = part.inline_data
    if blob is None or blob.data is None:
        return f"[Artifact {name} has no inline content.]"
    mime_type = (blob.mime_type or "application/octet-stream").split(";", 1)[0].strip()
    if mime_type.startswith("text/") or mime_type in _TEXT_TYPES:
        return blob.data.decode("utf-8", errors="replace")
    return (
        f"[Binary artifact {name}: type {mime_type}, {len(blob.data) / 1024:.1f} KB; "
        "its content cannot be shown as text.]"
    )


load_artifacts_tool = LoadArtifactsTool()
