"""Instruction templating: `{key}` is replaced by the state value, `{key?}` by '' when missing,
`{artifact.name}` by the text of the session's artifact `name` (`{artifact.name?}` likewise).

Only identifiers (optionally prefixed `app:`, `user:`, `temp:`) are replaced, so JSON examples and
other braces in an instruction pass through untouched, as in ADK. A missing required key or
artifact raises MissingStateKey, where ADK raises KeyError.
"""

import re
from collections.abc import Mapping
from typing import Any

from app.contexts.readonly import ReadonlyContext
from app.errors import MissingStateKey

_PLACEHOLDER = re.compile(r"\{+[^{}]*\}+")
_NAME = re.compile(r"^(?:(?:app|user|temp):)?[A-Za-z_][A-Za-z0-9_]*$")


def inject_state(template: str, state: Mapping[str, Any]) -> str:
    """Fill `{key}` placeholders of `template` from `state`."""

    def replace(match: re.Match[str]) -> str:
        raw = match.group()
        name = raw.strip("{} ")
        optional = name.endswith("?")
        name = name.removesuffix("?")
        if not _NAME.match(name):
            return raw
        if name in state:
            value = state[name]
            return "" if value is None else str(value)
        if optional:
            return ""
        raise MissingStateKey(f"Context variable not found: `{name}`.")

    return _PLACEHOLDER.sub(replace, template)


async def inject_session_state(template: str, readonly_context: ReadonlyContext) -> str:
    """`template` with its state and artifact placeholders filled (ADK's function)."""
    if "artifact." in template:
        template = await _inject_artifacts(template, readonly_context)
    return inject_state(template, readonly_context.state)


_ARTIFACT = re.compile(r"\{+\s*artifact\.([^{}?]+?)(\?)?\s*\}+")


async def _inject_artifacts(template: str, context: ReadonlyContext) -> str:
    ctx = context._invocation_context
    pieces: list[str] = []
    last = 0
    for match in _ARTIFACT.finditer(template):
        name, optional = match.group(1).strip(), match.group(2) is not None
        service = ctx.artifact_service
        if service is None:
            raise ValueError("Artifact service is not initialized.")
        part = await service.load_artifact(
            app_name=ctx.app_name, user_id=ctx.user_id, session_id=ctx.session.id, filename=name
        )
        if part is None and not optional:
            raise MissingStateKey(f"Artifact {name} not found.")
        text = ""
        if part is not None:
            if part.text is not None:
                text = part.text
            elif part.inline_data is not None and part.inline_data.data is not None:
                text = part.inline_data.data.decode("utf-8", errors="replace")
        pieces.append(template[last : match.start()])
        pieces.append(text)
        last = match.end()
    pieces.append(template[last:])
    return "".join(pieces)


__all__ = ["MissingStateKey", "inject_session_state", "inject_state"]
