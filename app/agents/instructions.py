"""Instruction templating: `{key}` is replaced by the state value, `{key?}` by '' when missing.

Only identifiers (optionally prefixed `app:`, `user:`, `temp:`) are replaced, so JSON examples and
other braces in an instruction pass through untouched, as in ADK.
"""

import re
from collections.abc import Mapping
from typing import Any

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


__all__ = ["MissingStateKey", "inject_state"]
