"""Render the configuration reference of README.md from the settings class.

`app.settings.Settings` is the one place a setting is declared, typed and described; the README's
table (between `<!-- settings:start -->` and `<!-- settings:end -->`) is rendered from it, so the
two cannot disagree: `tests/test_settings_reference.py` fails when they do. Run
`.venv/bin/python -m scripts.settings_reference` to rewrite the table in place.
"""

import sys
import typing
from pathlib import Path
from types import UnionType
from typing import Any, Literal

from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from app.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
START = "<!-- settings:start -->"
END = "<!-- settings:end -->"
COMMAND = ".venv/bin/python -m scripts.settings_reference"


def _choices(annotation: Any) -> list[str]:
    """The values of a `Literal[...]` annotation (inside `X | None` too), else none."""
    if typing.get_origin(annotation) is Literal:
        return [str(value) for value in typing.get_args(annotation)]
    if typing.get_origin(annotation) in (typing.Union, UnionType):
        return [value for arg in typing.get_args(annotation) for value in _choices(arg)]
    return []


def _default(field: FieldInfo) -> str:
    """The default as a reader would write it in the environment."""
    value = field.default
    if value is PydanticUndefined and field.default_factory is not None:
        value = field.default_factory()  # type: ignore[call-arg]
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, str) and not value:
        return "empty"
    if isinstance(value, list) and not value:
        return "`[]`"
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return f"`{value}`"


def _cell(text: str) -> str:
    """One table cell: one line, `|` escaped, and `<...>` outside code spans kept visible."""
    pieces = " ".join(text.split()).replace("|", "\\|").split("`")
    for index in range(0, len(pieces), 2):  # the even pieces are outside code spans
        pieces[index] = pieces[index].replace("<", "&lt;").replace(">", "&gt;")
    return "`".join(pieces)


def render_table() -> str:
    """The markdown table of every setting: variable, default, meaning."""
    prefix = str(Settings.model_config.get("env_prefix", ""))
    rows = ["| variable | default | meaning |", "|---|---|---|"]
    for name, field in Settings.model_fields.items():
        meaning = field.description or ""
        choices = _choices(field.annotation)
        if choices and not all(f"`{choice}`" in meaning for choice in choices):
            meaning = f"{meaning} One of " + ", ".join(f"`{c}`" for c in choices) + "."
        rows.append(f"| `{prefix}{name.upper()}` | {_default(field)} | {_cell(meaning)} |")
    return "\n".join(rows) + "\n"


def replace_table(markdown: str, table: str) -> str:
    """`markdown` with the text between the markers replaced by `table`."""
    before, start, rest = markdown.partition(START)
    _, end, after = rest.partition(END)
    if not start or not end:
        raise ValueError(f"README.md lacks the markers {START} ... {END}")
    return f"{before}{START}\n{table}{END}{after}"


if __name__ == "__main__":
    README.write_text(replace_table(README.read_text(), render_table()))
    sys.stdout.write(f"wrote the settings table of {README}\n")
